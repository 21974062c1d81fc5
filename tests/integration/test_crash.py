"""Crash recovery: the streaming driver is SIGKILLed mid-run, twice, and restarted from its
checkpoints while the producer is still publishing. Afterwards nothing is lost, nothing is
doubled, and stream == batch."""

import os
import random
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from batch.rebuild import rebuild
from batch.verify import verify
from jobs.submit import run_job, submit_command, submit_env
from producer.generator import Rates
from tests.conftest import settings_env
from tests.integration.producing import produce

pytestmark = pytest.mark.integration

STREAM_ARGS = ["run", "--trigger-seconds", "1", "--max-offsets-per-trigger", "3000", "--max-files-per-trigger", "2"]


def committed_batches(settings, query: str) -> int:
    commits = Path(settings.checkpoint_path(query)) / "commits"
    return len([p for p in commits.glob("[0-9]*")]) if commits.is_dir() else 0


def wait_for_commits(settings, query: str, at_least: int, proc, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while committed_batches(settings, query) < at_least:
        assert proc.poll() is None, f"streaming job exited early with {proc.returncode}"
        assert time.monotonic() < deadline, f"{query} did not reach {at_least} batches"
        time.sleep(0.2)


def crash(proc) -> None:
    """SIGKILL the whole driver (JVM and Python), as a machine failure would."""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def test_sigkill_twice_mid_run_loses_and_doubles_nothing(spark, pipeline, tmp_path):
    rng = random.Random()
    print(f"crash schedule seed: {rng.getstate()[1][0]}")
    env = submit_env(settings_env(pipeline))
    producer = threading.Thread(
        target=produce, args=(pipeline, 40_000), kwargs={"rates": Rates(late=0.03, very_late=0.01)}
    )
    producer.start()
    log = open(tmp_path / "stream.log", "wb")
    for attempt in range(2):
        proc = subprocess.Popen(
            submit_command("streaming/run.py", STREAM_ARGS, pipeline),
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        done_before = committed_batches(pipeline, "refine")
        wait_for_commits(pipeline, "refine", done_before + 1, proc)
        time.sleep(rng.uniform(0.0, 3.0))  # somewhere inside a later batch
        crash(proc)
        print(f"kill {attempt + 1}: refine had {committed_batches(pipeline, 'refine')} batches")
    producer.join()
    run_job("streaming/run.py", ["run", "--until-caught-up"], pipeline, env=settings_env(pipeline))

    rebuild(spark, pipeline)
    verdict = verify(spark, pipeline)
    assert verdict["passed"], verdict["expectations"]
    r = verdict["reconciliation"]
    assert r["acked"] == 40_000 and r["lost"] == 0
    assert all(e["success"] for e in verdict["expectations"] if e["suite"] == "domain_silver")  # unique event_id
