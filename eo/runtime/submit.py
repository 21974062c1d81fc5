"""spark-submit for the job modules: how Airflow, the demo and the tests launch Spark work.

The same command runs against `local[*]` or a cluster master; only `--master` differs.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from eo.runtime.config import REPO_ROOT, Settings
from eo.runtime.environment import environment
from eo.runtime.spark import BASE_CONF, JAVA, machine_executor_options, with_machine_options

# Passed by this project's spark-submit: the driver's memory and JVM options are read at launch (a
# session's conf is too late), and where it listens is decided by who launches it (loopback here;
# a session under spark-submit leaves it to the launcher, eo/runtime/spark.py).
LAUNCH_KEYS = ("spark.driver.memory", JAVA, "spark.driver.host", "spark.driver.bindAddress")

PACKAGES = ("eo", "streaming", "batch", "ops")
PYFILES_DIR = REPO_ROOT / ".cache" / "pyfiles"
ZIP_STEM = "eo-jobs"
# A zip of another code version is deleted once nothing on this machine names it (in its command
# line or environment) and it has not been used for this long.
PRUNE_AFTER_SECONDS = 24 * 3600.0
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # the zip's entries carry no build time: same code, same bytes


def spark_submit_binary() -> str:
    local = Path(sys.executable).parent / "spark-submit"
    found = str(local) if local.exists() else shutil.which("spark-submit")
    if not found:
        raise FileNotFoundError("spark-submit not found; run `make setup`")
    return found


PACKAGED = ("*.py", "*.schema.json")


def _sources(root: Path) -> list[tuple[str, bytes]]:
    """The job packages' files under `root`, read once: (path in the zip, contents), in order: the
    code and the sources' declarations (eo/core/sources/*.schema.json), which it reads as data."""
    return [
        (path.relative_to(root).as_posix(), path.read_bytes())
        for package in PACKAGES
        for path in sorted(p for pattern in PACKAGED for p in (root / package).rglob(pattern))
    ]


def code_version(sources: list[tuple[str, bytes]]) -> str:
    """A digest of the files' names and contents: the zip's name for that code."""
    digest = hashlib.sha256()
    for name, data in sources:
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()[:16]


def _write_zip(sources: list[tuple[str, bytes]], folder: Path, stem: str) -> Path:
    """The zip under a name no other build uses (a build beside it writes its own)."""
    fd, name = tempfile.mkstemp(dir=folder, prefix=f".{stem}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
            for arcname, data in sources:
                info = zipfile.ZipInfo(arcname, _FIXED_TIME)
                info.compress_type, info.external_attr = zipfile.ZIP_DEFLATED, 0o644 << 16
                zf.writestr(info, data)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return Path(name)


def build_pyfiles(target: Path | None = None, root: Path = REPO_ROOT, folder: Path | None = None) -> Path:
    """Zip the job packages, so a driver or executor elsewhere imports the same code.

    Without `target`: once per code version, as `<folder>/eo-jobs-<version>.zip` (folder:
    PYFILES_DIR by default); a zip already there is used as it is and never rewritten, so a job
    keeps reading the file it was started with, whatever jobs start beside it or after a code
    change. Zips of other versions are deleted when unused for a day and named by no process of
    this machine.
    With `target`: that file, replaced as a whole.
    Either way each build writes under a name of its own and then renames it: two builds at once
    never touch each other's file, and nobody ever reads a zip half written."""
    sources = _sources(root)
    if target is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(_write_zip(sources, target.parent, target.stem), target)
        return target
    folder = PYFILES_DIR if folder is None else folder
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{ZIP_STEM}-{code_version(sources)}.zip"
    if target.exists():
        os.utime(target)  # in use: not pruned
    else:
        tmp = _write_zip(sources, folder, target.stem)
        try:
            os.link(tmp, target)  # only if absent: a zip another build put there first stays
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    prune_pyfiles(folder, keep=target)
    return target


def _named_by_processes(paths: list[Path]) -> set[Path]:
    """Those of `paths` that a live process (readable: this user's) names in its command line or
    environment, as spark-submit, its JVM and the Python workers name their --py-files."""
    wanted = {path: str(path).encode() for path in paths}
    named: set[Path] = set()
    for proc in Path("/proc").glob("[0-9]*"):
        for part in ("cmdline", "environ"):
            try:
                blob = (proc / part).read_bytes()
            except OSError:
                continue
            named.update(path for path, name in wanted.items() if name in blob)
    return named


def prune_pyfiles(folder: Path, keep: Path | None = None, now: float | None = None) -> list[Path]:
    """Delete the zips (and temporary files of builds that died) of `folder` other than `keep`
    that were last used more than PRUNE_AFTER_SECONDS ago and that no live process names.
    Nothing is deleted where processes cannot be listed (no /proc). Returns what was deleted."""
    if not Path("/proc/self").exists():
        return []
    limit = (time.time() if now is None else now) - PRUNE_AFTER_SECONDS
    stale = []
    for path in [*folder.glob(f"{ZIP_STEM}*.zip"), *folder.glob(f".{ZIP_STEM}*.tmp"), *folder.glob(f"{ZIP_STEM}.tmp")]:
        try:
            if path != keep and path.stat().st_mtime < limit:
                stale.append(path)
        except FileNotFoundError:
            continue
    if not stale:
        return []
    in_use = _named_by_processes(stale)
    deleted = [path for path in stale if path not in in_use]
    for path in deleted:
        path.unlink(missing_ok=True)
    return deleted


def submit_conf(settings: Settings, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The --conf settings every job gets (the Airflow operator uses the same); the driver's JVM
    options end with this machine's own (EO_JVM_OPTIONS), and a cluster's executors get them too."""
    launch = {key: BASE_CONF[key] for key in LAUNCH_KEYS}
    launch[JAVA] = with_machine_options(launch[JAVA])
    launch.update(machine_executor_options())
    return {"spark.jars": ",".join(environment(settings).jars()), **launch, **(extra or {})}


def submit_command(script: str, args: list[str], settings: Settings, conf: dict[str, str] | None = None) -> list[str]:
    """`script` is relative to the repo, one of jobs/, e.g. jobs/stream.py."""
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
        print("usage: python -m eo.runtime.submit jobs/<job>.py [args...]   (jobs/stream.py, jobs/rebuild.py, ...)")
        return 2
    return run_job(argv[0], argv[1:], load_settings(), check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
