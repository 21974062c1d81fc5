"""An interrupted demo stops what it started (lab/stopping.py): a SIGTERM while its stream runs
leaves no broker and no Spark job of it running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from eo.runtime.config import REPO_ROOT
from infra.kafka import Broker
from tests.conftest import TEST_KAFKA_PORT

pytestmark = pytest.mark.integration


def processes_of(prefix: str) -> list[int]:
    """The processes run for the demo of topics `prefix`-* (their environment names one), the demo's own
    included."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if any(v.startswith(f"EO_TOPIC={prefix}-".encode()) for v in environ.split(b"\0")):
            found.append(int(entry.name))
    return found


def wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.5)
    return condition()


def test_a_sigterm_while_the_demo_streams_stops_its_stream_and_its_broker(tmp_path):
    port = TEST_KAFKA_PORT + 2  # a broker of its own (the suite's listens on TEST_KAFKA_PORT, +1)
    broker = Broker.default(port=port, home=tmp_path / "kafka")
    topic = f"demo-{uuid.uuid4().hex[:8]}"  # each source's topic starts with it
    env = {k: v for k, v in os.environ.items() if not k.startswith("EO_")}
    env |= {
        "PYTHONPATH": str(REPO_ROOT),
        "EO_KAFKA_BOOTSTRAP": broker.bootstrap,
        "EO_REPORTS_ROOT": str(tmp_path / "reports"),
        "EO_LOG_DIR": str(tmp_path / "logs"),
    }
    args = ["--events", "3000", "--topic-prefix", topic, "--workdir", str(tmp_path / "demo")]
    demo = subprocess.Popen(
        [sys.executable, "-c", _DEMO.format(home=str(tmp_path / "kafka"), port=port), *args],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        for line in demo.stdout:
            if line.startswith("== 3."):
                break
        else:
            pytest.fail(f"the demo ended before streaming (exit {demo.wait()})")
        # spark-submit and its driver are up: a process of the demo beside the demo itself
        assert wait_for(lambda: len(processes_of(topic)) > 1, 120), "no stream job started"
        assert broker.running()
        demo.send_signal(signal.SIGTERM)
        rest = demo.communicate(timeout=120)[0]
        assert demo.returncode == 143, rest
        assert "stopped by SIGTERM" in rest and "== 7. stop Kafka" in rest, rest
        assert wait_for(lambda: not processes_of(topic), 30), f"left running: {processes_of(topic)}"
        assert not broker.running()
    finally:
        if demo.poll() is None:
            demo.kill()
        for pid in processes_of(topic):
            os.kill(pid, signal.SIGKILL)
        broker.stop()


# The demo as `make demo` runs it, on a broker of the test's own port and folder.
_DEMO = """
import sys
import infra.kafka
from infra.kafka import Broker
Broker.default = classmethod(lambda cls, port=None, home=None: Broker({port}, infra.kafka.Path({home!r})))
from eo.runtime.cli import guarded
from lab.demo import main
from lab.stopping import stoppable
sys.exit(guarded(lambda argv: stoppable(main, sys.argv[1:])))
"""
