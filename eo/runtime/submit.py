"""spark-submit for the job modules: how Airflow, the demo and the tests launch Spark work.

The same command runs against `local[*]` or a cluster master; only `--master` differs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from eo.runtime.config import REPO_ROOT, Settings
from eo.runtime.environment import environment
from eo.runtime.spark import BASE_CONF

# Passed by this project's spark-submit: the driver's memory and JVM options are read at launch (a
# session's conf is too late), and where it listens is decided by who launches it (loopback here;
# a session under spark-submit leaves it to the launcher, eo/runtime/spark.py).
LAUNCH_KEYS = ("spark.driver.memory", "spark.driver.extraJavaOptions", "spark.driver.host", "spark.driver.bindAddress")

PACKAGES = ("eo", "streaming", "batch", "ops")
PYFILES_ZIP = REPO_ROOT / ".cache" / "pyfiles" / "eo-jobs.zip"


def spark_submit_binary() -> str:
    local = Path(sys.executable).parent / "spark-submit"
    found = str(local) if local.exists() else shutil.which("spark-submit")
    if not found:
        raise FileNotFoundError("spark-submit not found; run `make setup`")
    return found


def build_pyfiles(target: Path = PYFILES_ZIP) -> Path:
    """Zip the job packages, so a driver or executor elsewhere imports the same code."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for package in PACKAGES:
            for path in sorted((REPO_ROOT / package).rglob("*.py")):
                zf.write(path, path.relative_to(REPO_ROOT))
    tmp.replace(target)
    return target


def submit_conf(settings: Settings, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The --conf settings every job gets (the Airflow operator uses the same)."""
    return {
        "spark.jars": ",".join(environment(settings).jars()),
        **{key: BASE_CONF[key] for key in LAUNCH_KEYS},
        **(extra or {}),
    }


def submit_command(script: str, args: list[str], settings: Settings, conf: dict[str, str] | None = None) -> list[str]:
    """`script` is relative to the repo, e.g. streaming/run.py."""
    cmd = [spark_submit_binary(), "--master", settings.spark_master]
    for key, value in submit_conf(settings, conf).items():
        cmd += ["--conf", f"{key}={value}"]
    cmd += ["--py-files", str(build_pyfiles()), str(REPO_ROOT / script), *args]
    return cmd


def job_env() -> dict[str, str]:
    """The variables a spark-submit'ed job needs on top of the caller's environment."""
    return {
        "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "TZ": "UTC",  # Python-side timestamps (collect, PostgreSQL) in the session time zone
        "EO_HOME": str(REPO_ROOT),  # the job code runs from a zip; config stays here
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
        # spark-submit and the job's Python come from this environment, wherever it is called from.
        "PATH": os.pathsep.join(filter(None, [str(Path(sys.executable).parent), os.environ.get("PATH")])),
    }


def submit_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    return {**os.environ, **job_env(), **(extra or {})}


def run_job(
    script: str,
    args: list[str],
    settings: Settings,
    env: dict[str, str] | None = None,
    check: bool = True,
    conf: dict[str, str] | None = None,
):
    """Run a job to completion, its output passed through; returns the CompletedProcess."""
    return subprocess.run(submit_command(script, args, settings, conf), env=submit_env(env), check=check)


def main(argv: list[str] | None = None) -> int:
    """python -m eo.runtime.submit <script> [args...]: one job under spark-submit, on this environment's
    master (EO_SPARK_MASTER overrides it, e.g. spark://127.0.0.1:7077)."""
    from eo.runtime.config import load_settings

    argv = sys.argv[1:] if argv is None else argv
    if not argv or not (REPO_ROOT / argv[0]).is_file():
        print("usage: python -m eo.runtime.submit streaming/run.py|batch/rebuild.py|batch/verify.py [args...]")
        return 2
    return run_job(argv[0], argv[1:], load_settings(), check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
