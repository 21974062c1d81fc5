"""A requested stop (SIGTERM: `make stream-stop`, a cancelled job run, `kill PID`) ends the stream
with exit 0 and a line saying it stopped (streaming/run.py `cli`), not 143 and an engine's trace."""

from __future__ import annotations

import os
import signal
import time

import pytest

from streaming import requested_stop
from streaming import run as stream_run

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def no_stop_left():
    requested_stop.STOP.clear()
    yield
    requested_stop.STOP.clear()


def test_a_sigterm_stops_the_stream_with_exit_0_and_says_so(monkeypatch, capsys):
    reached = []

    def running_stream(argv):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the signal interrupts the wait, as it interrupts the query's
        reached.append("past the stop")
        return 1

    monkeypatch.setattr(stream_run, "main", running_stream)
    before = signal.getsignal(signal.SIGTERM)
    assert stream_run.cli([]) == 0
    assert reached == [] and signal.getsignal(signal.SIGTERM) is before
    assert requested_stop.STOPPED in capsys.readouterr().err


def test_what_the_engine_raises_after_a_stop_is_the_stops_doing(monkeypatch, capsys):
    """The JVM got the SIGTERM too (a process group stopped): its calls fail while the run unwinds."""

    def engine_gone(argv):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        finally:
            raise ConnectionRefusedError("the Java gateway is gone")  # as py4j fails stopping the query

    monkeypatch.setattr(stream_run, "main", engine_gone)
    assert stream_run.cli([]) == 0
    assert "stopped: a stop was requested (SIGTERM)" in capsys.readouterr().err


def test_without_a_stop_a_failure_keeps_its_code(monkeypatch):
    monkeypatch.setattr(stream_run, "main", lambda argv: 3)
    assert stream_run.cli([]) == 3
