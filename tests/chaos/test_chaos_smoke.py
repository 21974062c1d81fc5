"""The fault lab, short: the streaming driver (a separate OS process) is SIGKILLed mid-run
three times, once inside the PostgreSQL transaction, and restarted from its checkpoints each
time; the broker is SIGKILLed and restarted; a paused zombie is fenced when it resumes. Then no
acknowledged event is lost, none is doubled, and stream == batch, in Delta and PostgreSQL."""

import json
import subprocess
import sys

import pytest

from eo.runtime.config import REPO_ROOT

pytestmark = [pytest.mark.chaos, pytest.mark.integration, pytest.mark.slow]


def test_smoke_run_is_exact_and_fences_the_zombie():
    result = subprocess.run([sys.executable, "-m", "lab.chaos", "--smoke"], cwd=REPO_ROOT, timeout=1500)
    report = json.loads((REPO_ROOT / "reports" / "chaos" / "latest" / "report.json").read_text())
    exact = report["guarantees"]["exactly-once"]
    assert exact["kills"] >= 3 and exact["faults"]["broker_restarts"] == 1 and exact["faults"]["zombies"] == 1
    assert exact["events_acked"] > 0 and exact["silver_rows"] > 0
    assert (exact["lost"], exact["duplicated"], exact["postgres_lost"], exact["postgres_duplicated"]) == (0, 0, 0, 0)
    assert exact["gold_mismatched_rows"] == 0
    assert exact["zombie_commits_refused"] == 1 and exact["zombie_rows_after_resume"] == 0
    assert exact["passed"] and report["passed"]
    assert result.returncode == 0
    assert (REPO_ROOT / "reports" / "chaos" / "latest" / "report.html").read_text().count("<tr>") == 4
