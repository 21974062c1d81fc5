"""Long work (a rebuild, a verification) says which step it is on, out of how many, and since when."""

from __future__ import annotations

import pytest

from eo.runtime.cli import Progress

pytestmark = pytest.mark.unit


def test_each_step_prints_its_label_number_name_and_seconds_since_the_start(capsys):
    now = iter([100.0, 100.4, 114.6, 171.0])  # started, then each step
    progress = Progress("rebuild", 4, clock=lambda: next(now))
    for name in ("quarantine", "silver", "campaign_minute_metrics"):
        progress.step(name)
    assert capsys.readouterr().out.splitlines() == [
        "[rebuild] 1/4 quarantine (t+0 s)",
        "[rebuild] 2/4 silver (t+15 s)",
        "[rebuild] 3/4 campaign_minute_metrics (t+71 s)",
    ]


def test_elapsed_is_the_seconds_since_the_start_that_the_stats_report():
    now = iter([50.0, 62.5])
    assert Progress("verify", 3, clock=lambda: next(now)).elapsed() == 12.5
