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
from batch.explain_text import render
from batch.verify_explain import diagnosis
from eo.core.lineage import EXPLAINED, ExplainError, batch_name
from eo.core.tables import BRONZE, CAMPAIGN_MINUTE_METRICS, USER_SESSIONS
from eo.core.transforms.dedup import first_copies
from eo.runtime.cli import NotReady
from eo.runtime.environment import environment
from tests.conftest import lake_settings
from tests.helpers import BASE, PRODUCED_AT, event, prepare_lake, records, stream

pytestmark = pytest.mark.unit

MINUTE0_PURCHASES = "campaign_id = 'c001' AND event_type = 'purchase' AND revenue = 12.50"  # one gold row


def metric_key(kind: str = "purchase", minute: int = 0) -> list[str]:
    start = (BASE + dt.timedelta(minutes=minute)).isoformat()
    return ["campaign_id=c001", f"event_type={kind}", f"window_start={start}"]


def at(partition: int, offset: int, payload) -> tuple:
    """A bronze-shaped record at chosen coordinates of topic t."""
    value = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    key = payload.get("event_id", "") if isinstance(payload, dict) else ""
    return (key, value, "t", partition, offset, PRODUCED_AT)


# Minute 3 of c001's purchases: copies of e6 on partitions 3 and 0 of one micro-batch (partition 3's
# comes first, at the lower offset, with another payload: partition 0's wins by the rule all the
# same), and a copy of e7 the reading refuses (a negative price).
MINUTE3 = [
    at(3, 50, event("e6", 3.1, "u6", "purchase", "9.99")),
    at(3, 51, event("e7", 3.2, "u7", "purchase", "-5")),
    at(0, 60, event("e6", 3.1, "u6", "purchase", "6.00")),
    at(0, 61, event("e7", 3.2, "u7", "purchase", "7.00")),
]
# A refused record naming c001's purchases whose event time cannot be read: in no minute's range.
NO_TIME = at(3, 52, event("e8", 3.3, "u8", "purchase", "1.00", event_time="last tuesday"))


@pytest.fixture(scope="module")
def explained_lake(spark, tmp_path_factory):
    """Two micro-batches: purchases and impressions of two users, a copy of e2 on another partition,
    a refused record naming c001, then a late event that joins u1's two sessions into one. The first
    also holds MINUTE3 and NO_TIME."""
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
    stream(spark, lake, [[*rows, *MINUTE3, NO_TIME], [copy], late])
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


def test_copies_in_one_micro_batch_on_two_partitions_say_which_won_by_which_rule(explained_lake, capsys, monkeypatch):
    found = explain(explained_lake, CAMPAIGN_MINUTE_METRICS.name, metric_key(minute=3), history_limit=0)
    assert found["adds_up"] and found["row"]["events"] == 2 and found["row"]["revenue"] == Decimal("13.00")
    e6 = next(e for e in found["events"] if e["event_id"] == "e6")
    copies = [(c["coordinates"]["partition"], c["coordinates"]["offset"], c["fate"]) for c in e6["copies"]]
    assert copies == [(0, 60, "kept"), (3, 50, "dropped")]  # partition 0 first, though its offset is higher
    kept, dropped = e6["copies"]
    assert kept["ingest_batch"] == dropped["ingest_batch"] == e6["ingest_batch"] and e6["ingest_batch"]["position"] == 1
    batch = batch_name(e6["ingest_batch"])
    assert e6["won_by"] == f"first copy: same ingest batch {batch} and topic t, then partition 0 < 3 (the next, t:3:50)"
    assert dropped["why"] == f"kept t:0:60 first: same ingest batch {batch} and topic t, then partition 0 < 3"
    assert (kept["payload"]["price"], dropped["payload"]["price"]) == ("6.00", "9.99")  # the loser's payload too
    assert e6["first_by_rule"] and found["rule"].startswith("of the copies of an event, the one bronze ingested first")
    # A copy that came a micro-batch later loses on its ingest batch, whatever its partition.
    e2 = next(e for e in explain(explained_lake, "silver", ["event_id=e2"], history_limit=0)["events"])
    later = batch_name(e2["copies"][1]["ingest_batch"])
    assert e2["won_by"].startswith(f"first copy: ingest batch {batch_name(e2['ingest_batch'])} < {later}"), e2
    # Each event's lateness: its Kafka timestamp against its event time.
    assert e6["lateness_seconds"] == (PRODUCED_AT - (BASE + dt.timedelta(minutes=3.1))).total_seconds()

    monkeypatch.setenv("EO_LAKE_ROOT", explained_lake.lake_root)
    monkeypatch.setenv("EO_CHECKPOINT_ROOT", explained_lake.checkpoint_root)
    assert main([CAMPAIGN_MINUTE_METRICS.name, *(f"--key={k}" for k in metric_key(minute=3)), "--history=0"]) == 0
    text = capsys.readouterr().out
    assert f"the rule: {found['rule']}" in text
    assert f"copies of e6, in first-copy order: {e6['won_by']}" in text
    kept_line = next(line for line in text.splitlines() if line.strip().startswith("kept") and "t:0:60" in line)
    assert batch in kept_line and "+29 d 23:56:54" in kept_line, kept_line
    dropped_line = next(line for line in text.splitlines() if "t:3:50" in line and "dropped" in line)
    assert batch in dropped_line and 'price "9.99" (kept: "6.00")' in dropped_line, dropped_line
    assert dropped_line.rstrip().endswith("then partition 0 < 3"), dropped_line


def test_a_quarantined_copy_counts_once_as_refused_and_unreadable_times_in_no_range(explained_lake):
    found = explain(explained_lake, CAMPAIGN_MINUTE_METRICS.name, metric_key(minute=3), history_limit=0)
    e7 = next(e for e in found["events"] if e["event_id"] == "e7")
    assert [(c["coordinates"]["offset"], c["fate"], c.get("reason")) for c in e7["copies"]] == [
        (61, "kept", None),
        (51, "refused", "bad_value:price"),
    ]
    assert e7["duplicates_dropped"] == [] and e7["won_by"] == "the only copy the reading accepted"
    assert (found["duplicates_dropped"], found["copies_refused"]) == (1, 1)  # e6's copy; e7's refused one
    assert [r["coordinates"]["offset"] for r in found["refused"]] == [51]  # once, as refused
    assert [r["coordinates"]["offset"] for r in found["refused_unreadable"]] == [52]  # apart: in no range
    minute0 = explain(explained_lake, CAMPAIGN_MINUTE_METRICS.name, metric_key(), history_limit=0)
    assert [r["reason"] for r in minute0["refused"]] == ["bad_value:price"]  # its own, not minute 3's
    assert [r["coordinates"]["offset"] for r in minute0["refused_unreadable"]] == [52]
    assert "1 copy dropped as a duplicate, 1 copy refused" in render(found)


def test_help_lists_every_table_with_its_key_columns(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    for name, table in EXPLAINED.items():
        line = next(line for line in text.splitlines() if line.strip().startswith(f"{name} "))
        assert line.split()[1:] == [part for k in table.key for part in ("--key", f"{k}=...")], line


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


def test_explains_order_of_copies_is_the_rule_stream_and_rebuild_apply(spark):
    """The first copy explain names is the one eo/core/transforms/dedup.py `first_copies` keeps, over
    copies in any batches (ingest batch unknown included), topics, partitions and offsets."""
    import random

    from eo.core.lineage import first_copy_key
    from eo.core.tables import INGEST_BATCH

    rng = random.Random(63)
    copies = []
    for n in range(60):
        for _ in range(rng.randint(1, 4)):
            batch = rng.choice([None, 1 << 40 | 1, 1 << 40 | 2, 2 << 40 | 1])
            at = {"topic": rng.choice(["t", "u"]), "partition": rng.randint(0, 3), "offset": rng.randint(0, 9)}
            copies.append({"event_id": f"e{n}", "ingest_batch": batch and {"version": batch}, "coordinates": at})
    unique = {(c["event_id"], *c["coordinates"].values()): c for c in copies}.values()  # one record per place
    rows = [(c["event_id"], *c["coordinates"].values(), (c["ingest_batch"] or {}).get("version")) for c in unique]
    frame = spark.createDataFrame(rows, f"event_id STRING, kafka_topic STRING, kafka_partition INT, "
                                        f"kafka_offset BIGINT, {INGEST_BATCH} BIGINT")  # fmt: skip
    kept = {r.event_id: (r.kafka_topic, r.kafka_partition, r.kafka_offset) for r in first_copies(frame).collect()}
    by_event = {}
    for c in unique:
        by_event.setdefault(c["event_id"], []).append(c)
    named = {e: tuple(min(cs, key=first_copy_key)["coordinates"].values()) for e, cs in by_event.items()}
    assert named == kept and len(kept) == 60
