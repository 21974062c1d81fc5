"""What the rebuild namespace holds, and what verify says of event time nobody rebuilt: "not
rebuilt, nothing to compare" (exit 3, no Spark), never rows that disagree; days in the future
are refused by the rebuild and by verify in one line (exit 2)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from batch import rebuild as rebuild_job
from batch import verify as verify_job
from eo.core.intervals import parse_many
from eo.runtime.coverage import coverage_folder, rebuilt_intervals, record_rebuilt
from tests.conftest import settings_env

pytestmark = pytest.mark.unit

UTC = dt.UTC


def day(d: int) -> str:
    start = dt.datetime(2026, 11, d, tzinfo=UTC)
    return f"{start.isoformat()}/{(start + dt.timedelta(days=1)).isoformat()}"


@pytest.fixture
def lake_env(lake, monkeypatch):
    for key, value in settings_env(lake).items():
        monkeypatch.setenv(key, value)
    return lake


def test_each_rebuild_adds_what_it_covered_up_to_when_it_started_plus_the_allowed_skew(lake):
    assert rebuilt_intervals(lake) == []
    record_rebuilt(lake, parse_many(day(19)), dt.datetime(2026, 11, 24, tzinfo=UTC))
    record_rebuilt(lake, parse_many(day(20)), dt.datetime(2026, 11, 24, 1, tzinfo=UTC))
    record_rebuilt(lake, parse_many(day(23)), dt.datetime(2026, 11, 23, 12, tzinfo=UTC))  # 11-23 went on
    assert rebuilt_intervals(lake) == parse_many(f"{day(19)},{day(20)},2026-11-23T00:00:00Z/2026-11-23T12:15:00Z")
    assert coverage_folder(lake).startswith(f"{lake.lake_root}/_rebuild/")  # beside the tables it describes


def test_a_day_nobody_rebuilt_is_not_rebuilt_without_starting_spark(lake_env, capsys, monkeypatch):
    monkeypatch.setattr(verify_job, "build_session", lambda *a: pytest.fail("Spark started for nothing"))
    record_rebuilt(lake_env, parse_many(day(19)), dt.datetime(2026, 11, 24, tzinfo=UTC))
    assert verify_job.main(["--interval", day(21)]) == 3
    out = capsys.readouterr().out
    assert "not rebuilt: 2026-11-21, nothing to compare (rebuilt so far: 2026-11-19)" in out
    assert "FAILED" not in out and "extra" not in out
    # Airflow's way (--verdict-only): exit 0, and the verdict says "not rebuilt" for the next task.
    assert verify_job.main(["--interval", day(21), "--verdict-only", "--run-name", "manual__x"]) == 0
    verdict = json.loads(Path(lake_env.reports_root, "verify/runs/manual__x.json").read_text())
    assert (verdict["status"], verdict["passed"], verdict["not_rebuilt"]) == ("not rebuilt", None, "2026-11-21")


def test_all_event_time_of_a_lake_never_rebuilt_is_not_rebuilt(lake_env, capsys):
    assert verify_job.main([]) == 3
    assert "not rebuilt: all event time, nothing to compare (rebuilt so far: nothing)" in capsys.readouterr().out


@pytest.mark.parametrize("job", [rebuild_job, verify_job])
def test_a_day_in_the_future_is_refused_in_one_line(job, lake_env, capsys):
    tomorrow = dt.datetime.now(UTC).date() + dt.timedelta(days=2)
    with pytest.raises(SystemExit) as exit_:
        job.main(["--start", f"{tomorrow}T00:00:00Z", "--end", f"{tomorrow + dt.timedelta(days=1)}T00:00:00Z"])
    assert exit_.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"bad interval: {tomorrow} is in the future (now ")
    assert line.endswith("nothing to rebuild or verify yet")
