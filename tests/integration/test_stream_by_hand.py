"""A stream started by hand (`python -m streaming run`, no pid file of `make stream-start`) is seen
by `make stream-status` through the lease's holder, and `make stream-stop` stops it: SIGTERM to
the driver, which stops its query, lets go of the lease and exits 0 saying it stopped, without
the engine's complaints of a session gone (docs/operator-faults.md, "A requested stop")."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from eo.runtime.config import REPO_ROOT
from eo.runtime.lake_origin import begun
from eo.runtime.submit import submit_env
from infra import streaming
from tests.conftest import settings_env
from tests.integration.producing import produce

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # about two minutes: a driver's start and stop


def test_a_stream_started_by_hand_is_seen_stopped_and_exits_0(pipeline, monkeypatch, tmp_path):
    monkeypatch.setattr(streaming, "SERVICES_DIR", tmp_path / "services")  # no pid file of the service
    produce(pipeline, 500, seed=31)
    log = tmp_path / "by-hand.log"
    args = [sys.executable, "-m", "streaming", "run", "--trigger-seconds", "1"]
    with open(log, "wb") as out:
        driver = subprocess.Popen(args, env=submit_env(settings_env(pipeline)), cwd=REPO_ROOT, stdout=out,
                                  stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while "[events] batch 0:" not in log.read_text(errors="replace"):
            assert driver.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
            time.sleep(1)
        assert streaming.running(pipeline), "a stream holding the lake's lease runs, however it was started"
        assert str(driver.pid) in streaming.by_lease(pipeline).holder
        seen = streaming.status(pipeline)
        assert seen.report["lease_holder"].startswith("the stream on ")
        held = streaming.by_lease(pipeline)
        assert seen.report["instance"]["pid"] == driver.pid and seen.report["instance"]["epoch"] == held.epoch
        assert (
            dict(seen.rows)["instance"] == f"pid {driver.pid} on {seen.report['instance']['host']}, epoch {held.epoch}"
        )
        (first,) = begun(pipeline)  # a first start: recorded in the lake
        assert first["how"] == "a first start: an empty lake, no checkpoint" and str(driver.pid) in first["by"]
        assert streaming.stop(pipeline)  # SIGTERM to the driver, then its exit awaited
        assert driver.wait(10) == 0
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
    said = log.read_text(errors="replace")
    assert "[streaming] stopped: a stop was requested (SIGTERM); the next start resumes from the checkpoint" in said
    assert "No active or default Spark session found" not in said
    assert not streaming.running(pipeline) and streaming.by_lease(pipeline) is None  # the lease let go at once
