"""The job image's Python environment, as a venv on this machine: the same job-requirements.txt and
requirements.lock the image's Dockerfile installs (eo/cloud/job_image.py), plus the release's
pyspark stand-in. Nothing of the project's own venv leaks in, so a package the jobs import but the
image lacks fails the smoke. Kept under .cache/, rebuilt when either file changes."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

from eo.cloud.job_image import LOCK, PROVIDED, requirements_text
from eo.runtime.config import REPO_ROOT

VENVS = REPO_ROOT / ".cache" / "job-venv"


def locked_versions() -> dict[str, str]:
    pins = (line.split("==", 1) for line in LOCK.read_text().splitlines() if "==" in line)
    return {name.strip().lower(): version.strip() for name, version in pins}


def job_venv(log=print) -> Path:
    """The venv's folder, built first when missing (a minute or two with pip's cache)."""
    requirements = requirements_text()
    digest = hashlib.sha256((requirements + LOCK.read_text()).encode()).hexdigest()[:12]
    venv = VENVS / digest
    if (venv / ".built").exists():
        return venv
    shutil.rmtree(VENVS, ignore_errors=True)  # earlier versions
    log(f"building the job venv {venv} from job-requirements.txt and requirements.lock")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    (venv / "job-requirements.txt").write_text(requirements)
    versions = locked_versions()
    provided = [f"{name}=={versions[name]}" for name in PROVIDED]
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "-q"]
    install = [*pip, "install", "-r", str(venv / "job-requirements.txt"), "-c", str(LOCK), *provided]
    subprocess.run(install, check=True)
    subprocess.run([*pip, "check"], check=True)
    (venv / ".built").write_text(digest)
    return venv
