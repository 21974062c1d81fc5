"""A rebuild says which table it is on, out of how many, and since when."""

from __future__ import annotations

import time

import pytest

from batch.rebuild import Progress

pytestmark = pytest.mark.unit


def test_each_step_prints_its_number_table_and_seconds_since_the_start(capsys):
    progress = Progress(4, time.monotonic() - 7.0)  # printed as 7 s for the next half second
    progress.step("quarantine")
    progress.step("silver")
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["[rebuild] 1/4 quarantine (t+7 s)", "[rebuild] 2/4 silver (t+7 s)"]
