"""The job zip spark-submit ships (eo/runtime/submit.py): built once per code version, each build
under a name of its own, so tasks started together (a backfill, a rebuild and its verify) never
race on one file and no job reads a zip half written or swapped under it."""

from __future__ import annotations

import os
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

from eo.runtime import submit
from eo.runtime.config import REPO_ROOT

pytestmark = pytest.mark.unit


def a_checkout(root: Path, version: str = "1") -> Path:
    for package in submit.PACKAGES:
        (root / package / "sub").mkdir(parents=True, exist_ok=True)
        (root / package / "__init__.py").write_text("")
        (root / package / "sub" / "code.py").write_text(f"VERSION = {version!r}\n")
    (root / "lab").mkdir(exist_ok=True)
    (root / "lab" / "not_shipped.py").write_text("")
    return root


def test_the_zip_is_built_once_per_code_version_and_never_rewritten(tmp_path):
    root, folder = a_checkout(tmp_path / "repo"), tmp_path / "pyfiles"
    first = submit.build_pyfiles(root=root, folder=folder)
    assert first.name.startswith("eo-jobs-") and first.suffix == ".zip"
    inode, contents = first.stat().st_ino, first.read_bytes()
    assert submit.build_pyfiles(root=root, folder=folder) == first
    assert first.stat().st_ino == inode and first.read_bytes() == contents  # used as it is
    with zipfile.ZipFile(first) as zf:
        assert sorted(zf.namelist()) == sorted(
            [f"{p}/__init__.py" for p in submit.PACKAGES] + [f"{p}/sub/code.py" for p in submit.PACKAGES]
        )

    (root / "batch" / "sub" / "code.py").write_text("VERSION = '2'\n")  # the code changes
    second = submit.build_pyfiles(root=root, folder=folder)
    assert second != first
    # A job started on the first version keeps reading the file it was started with.
    assert first.stat().st_ino == inode and first.read_bytes() == contents
    with zipfile.ZipFile(second) as zf:
        assert zf.read("batch/sub/code.py") == b"VERSION = '2'\n"
    assert sorted(p.name for p in folder.iterdir()) == sorted([first.name, second.name])  # no temporaries


def test_the_same_code_gives_the_same_bytes(tmp_path):
    root = a_checkout(tmp_path / "repo")
    one = submit.build_pyfiles(tmp_path / "a" / "eo-jobs.zip", root=root)
    os.utime(root / "eo" / "sub" / "code.py", (1, 1))  # touched, not changed
    two = submit.build_pyfiles(tmp_path / "b" / "eo-jobs.zip", root=root)
    assert one.read_bytes() == two.read_bytes()


def race(build, threads: int = 8, rounds: int = 3) -> tuple[list[Path], list[BaseException]]:
    """`threads` threads each calling `build` `rounds` times, all released at once; every zip a
    build returns is checked whole right away."""
    built: list[Path] = []
    errors: list[BaseException] = []
    start = threading.Barrier(threads)

    def run() -> None:
        try:
            start.wait()
            for _ in range(rounds):
                path = build()
                with zipfile.ZipFile(path) as zf:
                    assert zf.testzip() is None and "eo/runtime/submit.py" in zf.namelist()
                built.append(path)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return built, errors


def test_builds_into_one_named_file_at_once_never_touch_each_others_temporaries(tmp_path):
    """The cloud artifacts and the bench name their zip: builds racing on it all succeed, whole."""
    target = tmp_path / "artifacts" / "eo-jobs.zip"
    built, errors = race(lambda: submit.build_pyfiles(target))
    assert errors == [] and built == [target] * 24
    assert sorted(p.name for p in target.parent.iterdir()) == ["eo-jobs.zip"]


def test_tasks_started_together_share_one_zip_of_their_code(tmp_path):
    """A backfill's tasks each build the zip as they start: one build wins, the others use it."""
    folder = tmp_path / "pyfiles"
    built, errors = race(lambda: submit.build_pyfiles(folder=folder))
    assert errors == [] and len(built) == 24
    (only,) = folder.iterdir()
    assert set(built) == {only} and only.name.startswith("eo-jobs-")


def test_the_submitted_command_names_the_zip_of_the_code_it_runs(tmp_path, monkeypatch):
    from eo.runtime.config import load_settings

    monkeypatch.setattr(submit, "PYFILES_DIR", tmp_path / "pyfiles")
    cmd = submit.submit_command("jobs/verify.py", ["--help"], load_settings("local"))
    shipped = Path(cmd[cmd.index("--py-files") + 1])
    assert shipped.parent == tmp_path / "pyfiles" and shipped.is_file()
    assert shipped.name == f"eo-jobs-{submit.code_version(submit._sources(REPO_ROOT))}.zip"


def test_zips_of_other_versions_go_once_unused_and_named_by_no_process(tmp_path):
    folder = tmp_path / "pyfiles"
    folder.mkdir()
    now = time.time()
    day_old = now - submit.PRUNE_AFTER_SECONDS - 60
    paths = {
        name: folder / name
        for name in ("eo-jobs-old.zip", "eo-jobs-running.zip", "eo-jobs-recent.zip", "eo-jobs-current.zip")
    }
    paths["died"] = folder / ".eo-jobs-current-x1y2.tmp"  # a build killed half way
    paths["legacy"] = folder / "eo-jobs.zip"  # the one fixed name of before
    for path in paths.values():
        path.write_bytes(b"zip")
        os.utime(path, (day_old, day_old))
    os.utime(paths["eo-jobs-recent.zip"], (now, now))

    deleted = submit.prune_pyfiles(folder, keep=paths["eo-jobs-current.zip"], now=now)
    assert sorted(p.name for p in deleted) == [
        ".eo-jobs-current-x1y2.tmp",
        "eo-jobs-old.zip",
        "eo-jobs-running.zip",
        "eo-jobs.zip",
    ]
    assert sorted(p.name for p in folder.iterdir()) == ["eo-jobs-current.zip", "eo-jobs-recent.zip"]


def test_a_zip_a_live_process_names_is_never_pruned(tmp_path, monkeypatch):
    # This very process names its own interpreter in its command line, as spark-submit and its
    # JVM name their --py-files.
    interpreter = Path(sys.orig_argv[0])
    assert submit._named_by_processes([interpreter, tmp_path / "eo-jobs-nobody.zip"]) == {interpreter}
    folder = tmp_path / "pyfiles"
    folder.mkdir()
    running, idle = folder / "eo-jobs-running.zip", folder / "eo-jobs-idle.zip"
    for path in (running, idle):
        path.write_bytes(b"zip")
        os.utime(path, (1, 1))
    monkeypatch.setattr(submit, "_named_by_processes", lambda paths: {p for p in paths if p == running})
    assert submit.prune_pyfiles(folder) == [idle]
    assert running.exists()
