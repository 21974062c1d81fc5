"""A lab run stopped by SIGTERM unwinds through its `finally` blocks, as at its end
(lab/stopping.py): an interrupted bench or demo stops the broker and the jobs it started."""

from __future__ import annotations

import os
import signal
import time

import pytest

from lab.stopping import stoppable

pytestmark = pytest.mark.unit


def test_sigterm_runs_the_cleanup_and_ends_with_143(capsys):
    stopped: list[str] = []

    def run(argv):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the signal arrives in this sleep
            return 0
        finally:
            stopped.append("broker")

    before = signal.getsignal(signal.SIGTERM)
    assert stoppable(run, []) == 143
    assert stopped == ["broker"]
    assert "stopped by SIGTERM" in capsys.readouterr().err
    assert signal.getsignal(signal.SIGTERM) is before  # handlers put back


def test_a_second_signal_does_not_cut_the_cleanup_short():
    stopped: list[str] = []

    def run(argv):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
            return 0
        finally:
            os.kill(os.getpid(), signal.SIGTERM)  # an impatient second stop
            time.sleep(0.1)
            stopped.append("broker")

    assert stoppable(run, []) == 143
    assert stopped == ["broker"]


def test_a_run_that_ends_returns_its_own_code():
    assert stoppable(lambda argv: 1, []) == 1
