"""Records lost at the source (eo/core/source_gaps.py, streaming/source_loss.py): found where the
next read starts before what the broker holds, refused unless a person accepted them, and a
batch that lost more than was accepted stops before it commits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eo.core.quality.reconcile import account_for_acks
from eo.core.source_gaps import Gap, described, found, merged, uncovered
from eo.runtime import source_gaps
from eo.runtime.cli import NotReady
from streaming import source_loss
from streaming.run import QUERY

pytestmark = pytest.mark.unit


def test_a_gap_is_where_the_next_read_starts_before_the_earliest_offset():
    gaps = found("t", {0: 100, 1: 50}, {0: 100, 1: 80, 2: 7, 3: 0})
    assert gaps == [Gap("t", 1, 50, 80), Gap("t", 2, 0, 7)]  # partition 2: never read, starts at 0
    assert found("t", {0: 120}, {0: 100}) == []  # ahead of the earliest offset: nothing lost


def test_only_what_no_accepted_gap_covers_is_left():
    gap = Gap("t", 1, 0, 100)
    assert uncovered([gap], [Gap("t", 1, 0, 100)]) == []
    assert uncovered([gap], [Gap("t", 1, 10, 20), Gap("t", 1, 50, 150)]) == [Gap("t", 1, 0, 10), Gap("t", 1, 20, 50)]
    assert uncovered([gap], [Gap("t", 2, 0, 100), Gap("other", 1, 0, 100)]) == [gap]  # another partition or topic
    assert uncovered([gap], [Gap("t", 1, 100, 200)]) == [gap]  # touching, not covering


def test_gaps_are_said_in_one_line():
    assert described([Gap("t", 2, 5003, 5503)]) == "t partition 2 offsets [5003, 5503) (500 records)"
    many = [Gap("t", p, 0, 10) for p in range(7)]
    line = described(many, most=2)
    assert line.startswith("70 records in 7 ranges: t partition 0 offsets [0, 10)") and line.endswith("and 5 more")
    assert merged([Gap("t", 0, 0, 10), Gap("t", 0, 10, 20)]) == [Gap("t", 0, 0, 20)]


def planned(settings, batches: list[dict[int, int]], first: dict[int, int]) -> None:
    """A checkpoint's offset log as Spark writes it: where it started, then each batch's end."""
    root = Path(settings.checkpoint_path(QUERY))
    (root / "sources" / "0").mkdir(parents=True)
    (root / "sources" / "0" / "0").write_text("\0v1\n" + json.dumps({settings.topic: first}))
    (root / "offsets").mkdir()
    for batch_id, ends in enumerate(batches):
        (root / "offsets" / str(batch_id)).write_text(f"v1\n{{}}\n{json.dumps({settings.topic: ends})}\n")


def test_a_batch_that_lost_more_than_was_accepted_stops_before_it_commits(lake, monkeypatch):
    planned(lake, [{"0": 100, "1": 100}, {"0": 200, "1": 200}], {"0": 0, "1": 0})
    earliest = {0: 0, 1: 0}
    monkeypatch.setattr(source_gaps, "earliest_offsets", lambda settings: earliest)
    guard = source_loss.BatchGuard(lake)
    guard(0)  # all there when batch 0 was read
    earliest[1] = 150  # Kafka deleted partition 1's records up to 150 before batch 1's tasks read [100, 200)
    with pytest.raises(source_loss.SourceLoss, match=r"partition 1 offsets \[100, 150\)"):
        guard(1)
    source_gaps.record(lake, [Gap(lake.topic, 1, 100, 150)], "tester", "a test")
    guard(1)  # accepted: read past
    earliest[1] = 180  # more went meanwhile, not accepted
    with pytest.raises(source_loss.SourceLoss, match=r"partition 1 offsets \[150, 180\) \(30 records\)"):
        guard(1)


def test_a_start_is_refused_naming_the_gap_until_it_is_accepted(lake, monkeypatch):
    monkeypatch.setattr(source_gaps, "earliest_offsets", lambda settings: {0: 300, 1: 0})
    with pytest.raises(NotReady, match=rf"{lake.topic} partition 0 offsets \[0, 300\) \(300 records\)") as refused:
        source_loss.before_start(lake, json.dumps({lake.topic: {"0": -2, "1": -2}}))  # a first start
    assert "python -m ops.source_gaps accept" in str(refused.value) and "failOnDataLoss" not in str(refused.value)
    source_gaps.record(lake, [Gap(lake.topic, 0, 0, 300)], "tester", "a test")
    assert source_loss.before_start(lake, json.dumps({lake.topic: {"0": -2, "1": -2}})) is True  # read past them
    assert source_loss.before_start(lake, json.dumps({lake.topic: {"0": 300, "1": 0}})) is False  # none ahead


def test_a_failure_names_the_guards_refusal_in_one_line(lake):
    wrapped = RuntimeError(
        f"StreamingQueryException: ... SourceLoss: {source_loss.refusal([Gap('t', 1, 5, 9)])}\n  at ..."
    )
    assert source_loss.named(lake, wrapped).startswith("records lost at the source before the stream read them, t ")


def test_acknowledged_records_in_an_accepted_gap_are_lost_at_the_source_not_lost(spark):
    key = "kafka_topic STRING, kafka_partition INT, kafka_offset BIGINT"
    acks = spark.createDataFrame([("t", 0, o, "event") for o in range(4)], f"{key}, kind STRING")
    bronze = spark.createDataFrame([("t", 0, 0, "e0")], f"{key}, event_id STRING")
    silver = spark.createDataFrame([("e0",)], "event_id STRING")
    quarantine = spark.createDataFrame([], key)
    found_rows = account_for_acks(acks, bronze, silver, quarantine, [Gap("t", 0, 1, 3)])
    status = {r.kafka_offset: r.status for r in found_rows.collect()}
    assert status == {0: "accounted", 1: "lost_at_source", 2: "lost_at_source", 3: "lost"}


def test_accept_records_exactly_what_the_refusal_showed_and_refuses_when_more_is_gone(lake, monkeypatch, capsys):
    """Kafka's retention goes on deleting after the refusal: `accept` records the ranges the
    refusal named (its record, or the ranges its line gives), never what is gone by the time it
    runs, and refuses in one line, recording nothing, when more is gone since."""
    from eo.runtime.cli import guarded
    from ops.source_gaps import main

    monkeypatch.setattr("ops.source_gaps.load_settings", lambda: lake)
    earliest = {0: 120, 1: 0}
    monkeypatch.setattr(source_gaps, "earliest_offsets", lambda settings: earliest)
    start = json.dumps({lake.topic: {"0": -2, "1": -2}})  # a first start: the next read is at 0
    with pytest.raises(NotReady) as refused:
        source_loss.before_start(lake, start)
    assert "(120 records)" in str(refused.value) and "--ranges 0:0-120`" in str(refused.value)
    assert source_gaps.read_refused(lake)[0] == [Gap(lake.topic, 0, 0, 120)]

    earliest[0] = 5000  # retention deleted 4,880 more before the operator ran accept
    accept = ["accept", "--by", "on-call", "--reason", "retention ran during the outage"]
    assert guarded(main, accept) == 3
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and line.startswith(
        f"error: more is lost now than was shown: {lake.topic} partition 0 offsets [120, 5000) (4,880 records) went "
        f"since, besides {lake.topic} partition 0 offsets [0, 120) (120 records); nothing accepted."
    )
    assert line.endswith("--ranges 0:0-5000`")
    assert source_gaps.accepted(lake) == []  # nothing recorded
    assert guarded(main, [*accept, "--ranges", "0:0-120"]) == 3  # the ranges given: the same answer
    assert source_gaps.accepted(lake) == []

    earliest[0] = 120  # (the records came back: restored into the topic) what was shown is all that is lost
    assert guarded(main, accept) == 0
    assert source_gaps.accepted(lake) == [Gap(lake.topic, 0, 0, 120)]
    assert source_loss.before_start(lake, start) is True
    assert guarded(main, accept) == 0 and "accepted already" in capsys.readouterr().out


def test_accept_refuses_ranges_that_are_not_lost_and_needs_a_refusal_or_ranges(lake, monkeypatch, capsys):
    from eo.runtime.cli import guarded
    from ops.source_gaps import main

    monkeypatch.setattr("ops.source_gaps.load_settings", lambda: lake)
    monkeypatch.setattr(source_gaps, "earliest_offsets", lambda settings: {0: 120, 1: 40})
    accept = ["accept", "--by", "on-call", "--reason", "r"]
    assert guarded(main, accept) == 3  # nothing refused yet, no ranges given
    assert "no refusal of the stream recorded" in capsys.readouterr().err
    assert guarded(main, [*accept, "--ranges", "0:0-200"]) == 3  # 120..200 is still in Kafka
    assert "offsets [120, 200) (80 records) is not lost at the source" in capsys.readouterr().err
    assert guarded(main, [*accept, "--ranges", "0:0-120"]) == 3  # partition 1 lost 40 more than named
    assert "partition 1 offsets [0, 40) (40 records) went since" in capsys.readouterr().err
    assert guarded(main, [*accept, "--ranges", "0:0-120,1:0-40"]) == 0
    assert source_gaps.accepted(lake) == [Gap(lake.topic, 0, 0, 120), Gap(lake.topic, 1, 0, 40)]
    with pytest.raises(SystemExit):
        main([*accept, "--ranges", "0:50-10"])


def test_a_new_checkpoint_starts_past_the_accepted_gaps_with_sparks_check_on(lake, monkeypatch):
    """Spark's failOnDataLoss stays on: a new checkpoint's starting offsets are moved past the
    accepted gaps, so only offsets a person accepted are ever skipped."""
    monkeypatch.setattr(source_gaps, "earliest_offsets", lambda settings: {0: 300, 1: 0, 2: 80})
    source_gaps.record(lake, [Gap(lake.topic, 0, 0, 300), Gap(lake.topic, 2, 50, 80)], "tester", "a test")
    starting = json.dumps({lake.topic: {"0": -2, "1": -2, "2": 50}})  # 2: bronze holds up to 49
    assert source_loss.before_start(lake, starting) is True
    past = source_loss.past_accepted(lake, starting)
    assert past == {0: 300, 2: 80}
    assert json.loads(source_loss.starting_past(starting, lake.topic, past)) == {
        lake.topic: {"0": 300, "1": -2, "2": 80}
    }
