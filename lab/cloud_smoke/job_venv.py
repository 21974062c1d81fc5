"""The job image's Python environment, as a venv on this machine: the same job-requirements.txt and
requirements.lock the image's Dockerfile installs (eo/cloud/job_image.py), plus the release's
PySpark: pyspark at the matrix's Spark version (infra/cloud-versions.json), which the release image
brings and the image never installs (job_image.PROVIDED), not the lock's (the local Spark's). So
the lock's pins of the provided packages are left out of the constraints. Nothing of the project's
own venv leaks in, so a package the jobs import but the image lacks fails the smoke. Kept under
.cache/, rebuilt when either file or the matrix's Spark changes."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

from eo.cloud.job_image import LOCK, PROVIDED, requirements_text
from eo.cloud.versions import cloud_versions
from eo.runtime.config import REPO_ROOT

VENVS = REPO_ROOT / ".cache" / "job-venv"
# The lock's pins the release replaces: its PySpark and what only the local PySpark needs.
RELEASE_OWN = (*PROVIDED, "pyspark-client")


def locked_versions() -> dict[str, str]:
    pins = (line.split("==", 1) for line in LOCK.read_text().splitlines() if "==" in line)
    return {name.strip().lower(): version.strip() for name, version in pins}


def constraints_text() -> str:
    """The lock without the pins of what the release brings."""
    lines = LOCK.read_text().splitlines()
    return "\n".join(line for line in lines if line.split("==", 1)[0].strip().lower() not in RELEASE_OWN) + "\n"


def job_venv(log=print) -> Path:
    """The venv's folder, built first when missing (a minute or two with pip's cache)."""
    requirements = requirements_text()
    spark = cloud_versions().spark
    digest = hashlib.sha256((requirements + LOCK.read_text() + spark).encode()).hexdigest()[:12]
    venv = VENVS / digest
    if (venv / ".built").exists():
        return venv
    shutil.rmtree(VENVS, ignore_errors=True)  # earlier versions
    log(f"building the job venv {venv} from job-requirements.txt, requirements.lock and pyspark {spark}")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    (venv / "job-requirements.txt").write_text(requirements)
    (venv / "constraints.txt").write_text(constraints_text())
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "-q"]
    release = f"pyspark=={spark}"  # and the py4j it requires
    install = [*pip, "install", "-r", str(venv / "job-requirements.txt"), "-c", str(venv / "constraints.txt"), release]
    subprocess.run(install, check=True)
    subprocess.run([*pip, "check"], check=True)
    (venv / ".built").write_text(digest)
    return venv
