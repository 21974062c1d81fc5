"""A warm standby driver (streaming/standby.py) waits while the active one lives, takes over when
it is SIGKILLed mid-stream, and afterwards nothing is lost, nothing doubled, and stream == batch."""

import re
import signal
import time
from pathlib import Path

import pytest

from batch.rebuild import rebuild
from batch.verify import verify
from lab.bench.pipeline import caught_up
from lab.instances import Instance, committed_batches
from tests.conftest import settings_env
from tests.integration.producing import produce

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ARGS = ["run", "--trigger-seconds", "1", "--max-offsets-per-trigger", "2500"]


def wait_until(check, timeout: float, what: str, *alive: Instance) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        for instance in alive:
            assert instance.alive, (
                f"instance {instance.number} exited with {instance.proc.returncode}; see {instance.log}"
            )
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def log_has(instance: Instance, text: str) -> bool:
    return instance.log.exists() and text in instance.log.read_text(errors="replace")


def test_a_standby_takes_over_from_a_killed_driver_and_loses_nothing(spark, pipeline, tmp_path):
    env = settings_env(pipeline)
    produce(pipeline, 10_000)
    active = Instance(1, pipeline, env, tmp_path / "active.log", ARGS).start()
    standby = None
    try:
        wait_until(lambda: committed_batches(pipeline) >= 1, 240, "a first micro-batch", active)
        # Next to a running job, as it would be deployed: it warms up, then waits.
        standby = Instance(2, pipeline, env, tmp_path / "standby.log", [*ARGS, "--standby"]).start()
        wait_until(lambda: log_has(standby, "[standby] warm"), 240, "the standby to warm up", standby, active)
        # Its rehearsal ran the tasks' writers into a scratch folder, and left nothing behind.
        warm = re.search(
            r"rehearsed on ([\d,]+) records, ([\d,]+) of them replayed as by a takeover; its tasks wrote (\d+) files",
            standby.log.read_text(),
        )
        assert warm and int(warm[1].replace(",", "")) > 0 and int(warm[3]) > 0, "the rehearsal wrote nothing"
        assert 0 < int(warm[2].replace(",", "")) < int(warm[1].replace(",", "")), "no replay, or more than a batch"
        scratch, files = Path(pipeline.checkpoint_path("events-rehearsal")), Path(pipeline.lake_root, "_stream")
        assert not scratch.exists() and not (files / "events-rehearsal").exists(), "the rehearsal left files"
        # All the standby said while the active instance was alive: it must not have taken over.
        said_while_active_lived = standby.log.read_text(errors="replace")
        assert active.alive, f"the active instance exited with {active.proc.returncode}; see {active.log}"
        active.kill()
        assert "taking over" not in said_while_active_lived, "the standby took over from a live instance"

        standby.count_from(time.time())
        produce(pipeline, 3_000, seed=8)  # traffic after the crash: only the standby can commit it
        wait_until(lambda: log_has(standby, "taking over"), 60, "the standby to take over", standby)
        assert standby.wait_first_commit(240) is not None, f"the standby never committed; see {standby.log}"
        assert "events epoch 2" in standby.log.read_text(), "the standby did not take new epochs"
        said = standby.log.read_text()
        assert "plan built while standing by)" in said and "stale" not in said, "the standby planned at its turn"
        wait_until(lambda: caught_up(pipeline), 300, "the standby to catch up", standby)
    finally:
        active.kill()
        if standby is not None:
            standby.signal(signal.SIGTERM)
            if standby.wait(60) is None:
                standby.kill()
    rebuild(spark, pipeline)
    verdict = verify(spark, pipeline)
    assert verdict["passed"], [e for e in verdict["expectations"] if not e["success"]]
    assert verdict["reconciliation"]["lost"] == 0 and verdict["reconciliation"]["acked"] == 13_000
