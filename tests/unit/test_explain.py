"""Explain a number: the events behind a gold row, their Kafka coordinates, what was dropped or
refused, the recomputation and the row's history (batch/explain.py)."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from decimal import Decimal
from pathlib import Path

import pytest

from batch.explain import explain, main
from batch.verify_explain import diagnosis
from eo.core.lineage import ExplainError
from eo.core.tables import BRONZE, CAMPAIGN_MINUTE_METRICS, USER_SESSIONS
from eo.runtime.cli import NotReady
from eo.runtime.environment import environment
from tests.conftest import lake_settings
from tests.helpers import BASE, event, prepare_lake, records, stream

pytestmark = pytest.mark.unit

MINUTE0_PURCHASES = "campaign_id = 'c001' AND event_type = 'purchase' AND events = 2"  # one gold row


def metric_key(kind: str = "purchase", minute: int = 0) -> list[str]:
    start = (BASE + dt.timedelta(minutes=minute)).isoformat()
    return ["campaign_id=c001", f"event_type={kind}", f"window_start={start}"]


@pytest.fixture(scope="module")
def explained_lake(spark, tmp_path_factory):
    """Two micro-batches: purchases and impressions of two users, a copy of e2 on another partition,
    a refused record naming c001, then a late event that joins u1's two sessions into one."""
    first = [
        event("e1", 0.1, "u1", "purchase", "10.00"),
        event("e2", 0.5, "u2", "purchase", "2.50"),
        event("e3", 0.7, "u1", "impression"),
        event("e4", 40.0, "u1", "impression"),  # a second session of u1, 40 minutes later
        {**event("bad", 0.2, "u3", "purchase"), "price": "-1"},  # refused: out of the price domain
        b"\xff\xfe not even text",  # bronze keeps bytes that are not UTF-8: the copies' scan must too
    ]
    rows = records(first)
    copy = records([event("e2", 0.5, "u2", "purchase", "2.50")], partitions=2)[0]
    copy = (copy[0], copy[1], copy[2], 1 - copy[3], 100, copy[5])  # the same event on the other partition
    lake = lake_settings(tmp_path_factory.mktemp("explain"))
    prepare_lake(spark, lake)
    late = records([event("e5", 20.0, "u1", "purchase", "1.25")])
    late = [(r[0], r[1], r[2], r[3], 200 + i, r[5]) for i, r in enumerate(late)]
    stream(spark, lake, [rows, [copy], late])
    return lake


def test_a_metrics_row_adds_up_from_its_events_found_in_bronze(explained_lake):
    found = explain(explained_lake, CAMPAIGN_MINUTE_METRICS.name, metric_key())
    row = found["row"]
    assert (row["events"], row["distinct_users"], row["revenue"]) == (2, 2, Decimal("12.50"))
    assert found["adds_up"] and found["differing_columns"] == []
    events = found["events"]
    assert [e["event_id"] for e in events] == ["e1", "e2"]
    assert len(events) == row["events"] and len({e["user_id"] for e in events}) == row["distinct_users"]
    assert sum(Decimal(e["price"]) for e in events) == row["revenue"]
    assert all(e["in_bronze"] for e in events)
    e2 = next(e for e in events if e["event_id"] == "e2")
    assert [d["coordinates"]["offset"] for d in e2["duplicates_dropped"]] == [100]
    assert found["duplicates_dropped"] == 1
    assert [r["reason"].split(":")[0] for r in found["refused"]] == ["bad_value"]
    assert found["micro_batch"]["position"] >= 1 and found["micro_batch"]["app_id"] == "events"  # the test's app id


def test_a_session_row_adds_up_and_its_history_shows_the_merge(explained_lake):
    key = ["user_id=u1", f"session_start={(BASE + dt.timedelta(minutes=0.1)).isoformat()}"]
    found = explain(explained_lake, USER_SESSIONS.name, key)
    assert found["adds_up"], found["differing_columns"]
    assert [e["event_id"] for e in found["events"]] == ["e1", "e3", "e5", "e4"]
    assert found["row"]["events"] == 4 and found["row"]["revenue"] == Decimal("11.25")
    changes = found["history"]["changes"]
    assert changes[0]["before"] is None and changes[0]["after"]["events"] == 2  # created by the first batch
    merge = changes[-1]
    assert merge["after"]["events"] == 4 and len(merge["merged"]) == 2, merge
    assert merge["position"] > changes[0]["position"] and merge["epoch"] == changes[0]["epoch"]


def test_an_older_version_is_explained_with_the_silver_of_its_own_micro_batch(explained_lake):
    settings = explained_lake
    key = ["user_id=u1", f"session_start={(BASE + dt.timedelta(minutes=0.1)).isoformat()}"]
    first = explain(settings, USER_SESSIONS.name, key)["history"]["changes"][0]["version"]
    found = explain(settings, USER_SESSIONS.name, key, version=first)
    assert found["version"] == first and found["row"]["events"] == 2
    assert found["adds_up"] and [e["event_id"] for e in found["events"]] == ["e1", "e3"]  # not e5: it came later


def test_a_tampered_row_does_not_add_up_and_names_its_column(explained_lake, tmp_path):
    copy = explained_lake.with_overrides(lake_root=str(tmp_path / "lake"))
    shutil.copytree(explained_lake.lake_root, copy.lake_root)
    table = environment(copy).table(CAMPAIGN_MINUTE_METRICS.name).refresh()
    table.update({"events": "events + 1"}, predicate=MINUTE0_PURCHASES)
    found = explain(copy, CAMPAIGN_MINUTE_METRICS.name, metric_key())
    assert not found["adds_up"] and found["differing_columns"] == ["events"]
    assert found["recomputed"]["events"] == 2 and found["row"]["events"] == 3


def test_a_silver_event_is_found_at_its_coordinates(explained_lake):
    found = explain(explained_lake, "silver", ["event_id=e2"], history_limit=0)
    assert found["adds_up"] and len(found["events"]) == 1
    assert found["events"][0]["in_bronze"] and len(found["events"][0]["duplicates_dropped"]) == 1


def test_a_key_that_is_not_there_does_not_add_up(explained_lake):
    found = explain(explained_lake, CAMPAIGN_MINUTE_METRICS.name, metric_key(minute=59), history_limit=0)
    assert found["row"] is None and found["events"] == [] and not found["adds_up"]


def test_a_lake_without_the_table_is_not_ready(lake):
    with pytest.raises(NotReady, match="no user_sessions table in the main namespace yet"):
        explain(lake, "user_sessions", ["user_id=u1", "session_start=2026-11-05T00:00:00Z"])


@pytest.mark.parametrize(
    "table, pairs, message",
    [
        ("bronze", ["key=x"], "unknown table 'bronze'"),
        ("user_sessions", ["user_id=u1"], "missing session_start"),
        ("user_sessions", ["user=u1", "session_start=2026-11-05T00:00:00"], "'user' is not a key column"),
        ("user_sessions", ["user_id=u1", "session_start=yesterday"], "is not a timestamp"),
        ("silver", ["event_id"], "col=value"),
    ],
)
def test_bad_requests_say_what_is_wrong(lake, table, pairs, message):
    with pytest.raises(ExplainError, match=message):
        explain(lake, table, pairs)


def test_the_command_prints_json_and_exits_by_the_verdict(explained_lake, capsys, monkeypatch):
    monkeypatch.setenv("EO_LAKE_ROOT", explained_lake.lake_root)
    monkeypatch.setenv("EO_CHECKPOINT_ROOT", explained_lake.checkpoint_root)
    args = [CAMPAIGN_MINUTE_METRICS.name, *(f"--key={k}" for k in metric_key())]
    assert main([*args, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["adds_up"] is True
    assert main(args) == 0 and "ADDS UP" in capsys.readouterr().out
    assert main([*args, "--version", "999"]) == 2
    assert "no version 999" in capsys.readouterr().err
    assert main([BRONZE.name, "--key", "key=x"]) == 2
    capsys.readouterr()
    assert main([*args, "--json", "--as-of", "2100-01-01T00:00:00Z"]) == 0  # the newest version by then
    assert json.loads(capsys.readouterr().out)["adds_up"] is True
    assert main([*args, "--as-of", "2000-01-01T00:00:00Z"]) == 2
    assert "no version committed by 2000-01-01" in capsys.readouterr().err


@pytest.fixture(scope="module")
def rebuilt_and_tampered(spark, explained_lake, tmp_path_factory):
    """A copy of the lake, rebuilt from bronze, with one stream gold row tampered with afterwards."""
    from batch.rebuild import rebuild

    root = tmp_path_factory.mktemp("tampered")
    copy = explained_lake.with_overrides(lake_root=str(root / "lake"), reports_root=str(root / "reports"))
    shutil.copytree(explained_lake.lake_root, copy.lake_root)
    rebuild(spark, copy)
    table = environment(copy).table(CAMPAIGN_MINUTE_METRICS.name).refresh()
    table.update({"revenue": "revenue + 1"}, predicate=MINUTE0_PURCHASES)
    return copy


@pytest.mark.slow
def test_verify_explains_a_tampered_row_on_the_streams_side(spark, rebuilt_and_tampered, capsys):
    from batch.verify import describe, verify

    verdict = verify(spark, rebuilt_and_tampered, None, run_name="tampered")
    metrics = verdict["tables"][CAMPAIGN_MINUTE_METRICS.name]
    assert not verdict["passed"] and metrics["different"] == 1
    [found] = metrics["explained"]
    assert found["key"]["campaign_id"] == "c001" and found["key"]["event_type"] == "purchase"
    assert found["stream"]["adds_up"] is False and found["stream"]["differing_columns"] == ["revenue"]
    assert found["batch"]["adds_up"] is True
    assert found["diagnosis"].startswith("the stream's row does not add up")
    assert set(found["stream"]["events"]) == set(found["batch"]["events"]) == {"e1", "e2"}
    assert json.loads(Path(found["file"]).read_text())["stream"]["adds_up"] is False
    text = describe(verdict)
    assert "stream does NOT add up, rebuild adds up" in text and found["file"] in text
    assert "python -m batch.explain campaign_minute_metrics --key 'campaign_id=c001'" in text


def _side(events: dict, adds_up: bool = True, row: dict | None = None) -> dict:
    return {"adds_up": adds_up, "row": row or {"events": len(events)}, "differing_columns": [], "events": events}


def test_the_diagnosis_tells_a_lost_event_from_another_copy_kept():
    one = {"e1": {"price": "1.00"}, "e2": {"price": "2.00"}}
    assert diagnosis(_side(one), _side(one)) == "both sides hold the same events and each adds up"
    lost = diagnosis(_side({"e1": one["e1"]}), _side(one))
    assert lost == "events only the stream holds [], only the rebuild ['e2']"
    copy = diagnosis(_side({**one, "e2": {"price": "9.00"}}), _side(one))
    assert copy == "the same events, but another copy kept of ['e2'] (a copy-choice difference)"
    wrong = _side(one, adds_up=False)
    wrong["differing_columns"] = ["revenue"]
    assert diagnosis(wrong, _side(one)) == "the stream's row does not add up from its own events (revenue)"
