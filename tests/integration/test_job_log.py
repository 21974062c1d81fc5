"""The terminal gets a failed job's one line, and Spark's traces go to the log file the line names
(eo/runtime/job_log.py): a Spark task that fails for a full disk used to put hundreds of lines of
Java and Python stack traces before it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from eo.runtime.config import REPO_ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # a JVM started: 40 s idle, 120 s on a busy machine

FAILING_JOB = textwrap.dedent(
    """
    import sys

    from eo.runtime.cli import guarded


    def fail(_row):
        raise OSError(28, "No space left on device")


    def main(argv):
        from eo.runtime.config import load_settings
        from eo.runtime.spark import build_session

        print("[job] 1/1 writing", flush=True)
        spark = build_session("eo-job-log", load_settings("local"), conf={"spark.master": "local[1]"})
        spark.range(2).foreach(fail)  # a task fails; Spark logs its trace and retries none (local)
        return 0


    sys.exit(guarded(main))
    """
)


def test_a_failed_job_prints_its_progress_and_one_line_naming_the_log_that_holds_the_trace(tmp_path):
    script = tmp_path / "failing_job.py"
    script.write_text(FAILING_JOB)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "EO_LOG_DIR": str(tmp_path / "logs")}
    env.pop("EO_JOB_LOG", None)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env, cwd=REPO_ROOT
    )
    assert done.returncode == 3, done.stderr[-3000:]
    assert done.stdout == "[job] 1/1 writing\n"
    (log,) = (tmp_path / "logs").iterdir()
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("error: a disk is full (No space left on device)"), done.stderr[-3000:]
    assert lines[-1].endswith(f" (Spark's log: {log})")
    # What the JVM says before its log is configured (its module notice) may stay; no trace does.
    assert len(lines) <= 4 and "\tat " not in done.stderr and "Traceback" not in done.stderr, done.stderr
    trace = log.read_text()
    assert "No space left on device" in trace and "\tat org.apache.spark" in trace and "Traceback" in trace
