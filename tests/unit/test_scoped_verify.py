"""Verification scoped to what it checks (batch/verify.py, eo/core/quality/reconcile.py): a day's
reconciliation counts the records whose events fall in it, so records of other days that no ack log
names fail nothing; a tampered row of the day fails it in one line naming table, key and both
values; and a rebuilt interval that no table holds a row of is answered without starting Spark."""

from __future__ import annotations

import csv
import datetime as dt
import json
import shutil
from pathlib import Path

import pytest
from pyspark.sql import functions as F

import batch.verify as verify_job
from batch.rebuild import classify_log, rebuild
from batch.verify import describe, verify
from eo.core.intervals import Interval
from eo.core.quality.reconcile import account_for_acks, acks_in_scope, record_fates, scoped_counts
from eo.core.tables import CAMPAIGN_MINUTE_METRICS, SOURCE_KEY
from eo.runtime.environment import environment
from eo.runtime.quality.verdicts import failure_line
from tests.conftest import settings_env
from tests.helpers import BASE

pytestmark = pytest.mark.unit

DAY1 = Interval(BASE, BASE + dt.timedelta(days=1))
EMPTY = Interval(BASE + dt.timedelta(days=10), BASE + dt.timedelta(days=11))  # the log holds nothing there
UNACKED = 3  # records of day 1 that no ack log names either


def interval_arg(interval: Interval) -> str:
    return f"{interval.start.isoformat()}/{interval.end.isoformat()}"


@pytest.fixture(scope="module")
def day_lake(spark, two_day_lake, tmp_path_factory):
    """two_day_lake's stream tables (the rebuilds other tests made left out), with an ack log that
    names day 1's records but UNACKED of them, none of day 2's, and one record past what the stream
    has read; day 1 and EMPTY rebuilt. Returns (settings, records of day 1 in bronze)."""
    root = tmp_path_factory.mktemp("scoped-verify")
    lake = two_day_lake.with_overrides(
        lake_root=str(root / "lake"),
        reports_root=str(root / "reports"),
        acks_root=str(root / "acks"),
        topic="t",  # the topic tests.helpers.records gives bronze's records
    )
    shutil.copytree(two_day_lake.lake_root, lake.lake_root, ignore=shutil.ignore_patterns("_rebuild"))
    classified = classify_log(spark, lake)
    day1 = classified.where((F.col("event_time") >= F.lit(DAY1.start)) & (F.col("event_time") < F.lit(DAY1.end)))
    coordinates = sorted(tuple(r) for r in day1.select(*SOURCE_KEY).collect())
    end = classified.where("kafka_partition = 0").agg(F.max("kafka_offset")).first()[0]
    Path(lake.acks_root).mkdir(parents=True)
    with open(Path(lake.acks_root) / "day1.csv", "w", newline="") as fh:
        rows = csv.writer(fh)
        rows.writerow(("topic", "partition", "offset", "kind"))
        rows.writerows((*c, "event") for c in coordinates[UNACKED:])
        rows.writerow(("t", 0, end + 3, "event"))  # acknowledged, not read by the stream yet
    rebuild(spark, lake, DAY1)
    rebuild(spark, lake, EMPTY)
    return lake, len(coordinates)


def test_a_day_passes_while_records_of_other_days_lack_ack_logs(spark, day_lake):
    lake, day1 = day_lake
    verdict = verify(spark, lake, [DAY1], run_name="scoped")
    r = verdict["reconciliation"]
    assert verdict["passed"], describe(verdict)
    assert (r["scope"], r["bronze"], r["acked"], r["unacked"]) == ("2026-11-05", day1, day1 - UNACKED, UNACKED)
    assert r["accepted"] == r["accounted"] == r["silver"] + r["quarantine"] + r["duplicates_removed"] == day1
    assert (r["lost"], r["not_read_yet"]) == (0, 1)
    text = describe(verdict)
    assert f"in bronze without a producer's ack log: {UNACKED} " in text
    assert "acknowledged, not read by the stream yet: 1 " in text
    assert f"accepted (acknowledged {day1 - UNACKED} + in bronze without an ack {UNACKED}) {day1} = silver" in text


def test_a_tampered_row_of_the_day_fails_it_naming_table_key_and_both_values(spark, day_lake, tmp_path):
    lake = day_lake[0].with_overrides(lake_root=str(tmp_path / "lake"), reports_root=str(tmp_path / "reports"))
    shutil.copytree(day_lake[0].lake_root, lake.lake_root)
    table = environment(lake).table(CAMPAIGN_MINUTE_METRICS.name).refresh()
    rows = table.to_pyarrow_table(partitions=[("window_date", "=", "2026-11-05")]).sort_by("window_start")
    victim = rows.slice(0, 1).to_pylist()[0]
    when = victim["window_start"].astimezone(dt.UTC)
    table.update(
        {"events": "events + 1"},
        predicate=f"campaign_id = '{victim['campaign_id']}' AND event_type = '{victim['event_type']}' "
        f"AND window_start = '{when:%Y-%m-%dT%H:%M:%S.%fZ}'",
    )
    verdict = verify(spark, lake, [DAY1], run_name="tampered")
    assert not verdict["passed"] and verdict["reconciliation"]["passed"]
    [explained] = verdict["tables"][CAMPAIGN_MINUTE_METRICS.name]["explained"]
    assert (explained["stream"]["adds_up"], explained["batch"]["adds_up"]) == (False, True), explained["diagnosis"]
    assert explained["diagnosis"] == "the stream's row does not add up from its own events (events)"
    key = f"campaign_id={victim['campaign_id']} event_type={victim['event_type']} window_start={when.isoformat()}"
    assert failure_line(verdict) == (
        f"stream and batch disagree over 2026-11-05: campaign_minute_metrics different 1 "
        f"(first: {key}: events stream {victim['events'] + 1}, batch {victim['events']})"
    )


class SparkStarted(AssertionError):
    pass


def test_a_rebuilt_interval_with_no_rows_is_answered_without_starting_spark(day_lake, monkeypatch, capsys):
    lake = day_lake[0]
    for name, value in settings_env(lake).items():
        monkeypatch.setenv(name, value)

    def no_spark(*_args, **_kwargs):
        raise SparkStarted("a Spark session was built")

    monkeypatch.setattr(verify_job, "build_session", no_spark)
    assert verify_job.main([f"--interval={interval_arg(EMPTY)}", "--run-name=empty"]) == 0
    out = capsys.readouterr().out
    assert "verification PASSED over 2026-11-15: no rows over 2026-11-15 on either side" in out
    verdict = json.loads((Path(lake.reports_root) / "verify" / "runs" / "empty.json").read_text())
    assert (verdict["passed"], verdict["empty"], verdict["scope"]) == (True, True, "2026-11-15")
    with pytest.raises(SparkStarted):  # a day that holds rows does need Spark: the logs tell them apart
        verify_job.main([f"--interval={interval_arg(DAY1)}"])


KEY = "kafka_topic STRING, kafka_partition INT, kafka_offset BIGINT"
AT_DAY1, AT_DAY2 = BASE + dt.timedelta(hours=5), BASE + dt.timedelta(days=1, hours=5)


def test_what_a_day_counts_of_the_acknowledged_records(spark):
    """In bronze: where its event falls (no readable time: no day). Not in bronze: below the end of
    what the stream read of its partition, a hole that every day counts; past it, not read yet."""
    acked = [(0, 0), (0, 1), (0, 2), (0, 5), (1, 0)]
    acks = spark.createDataFrame([("t", p, o, "event") for p, o in acked], f"{KEY}, kind STRING")
    classified = spark.createDataFrame(
        [("t", 0, 0, "e0", AT_DAY1), ("t", 0, 1, None, None), ("t", 0, 3, "e3", AT_DAY1), ("t", 1, 0, "e9", AT_DAY2)],
        f"{KEY}, event_id STRING, event_time TIMESTAMP",
    )
    silver = spark.createDataFrame([("e0",), ("e3",), ("e9",)], "event_id STRING")
    quarantine = spark.createDataFrame([("t", 0, 1)], KEY)
    found = account_for_acks(acks, classified, silver, quarantine)
    fates = {r.kafka_partition * 10 + r.kafka_offset: (r.status, r.in_bronze, r.unread) for r in found.collect()}
    assert fates == {
        0: ("accounted", True, False),
        1: ("accounted", True, False),  # quarantined: its event time cannot be read
        2: ("lost", False, False),  # a hole: offsets 0 and 3 were read around it
        5: ("lost", False, True),  # past offset 3, the last bronze holds of partition 0
        10: ("accounted", True, False),
    }

    def counted(intervals):
        return sorted(r.kafka_partition * 10 + r.kafka_offset for r in found.where(acks_in_scope(intervals)).collect())

    assert counted([DAY1]) == [0, 2]  # its own event, and the hole that may be of any day
    assert counted([Interval(DAY1.end, DAY1.end + dt.timedelta(days=1))]) == [2, 10]
    assert counted(None) == [0, 1, 2, 5, 10]  # all event time: every acknowledged record


def test_each_day_counts_its_own_copies_whatever_day_the_first_copy_is_on(spark):
    """An event sent again with another event time (a retry that re-stamped it) on the next day: the
    first copy by the rule (lowest ingest batch, then coordinates) counts on its day, as silver holds
    it; the later copy counts as a duplicate on the day it names. A refused copy never competes."""
    classified = spark.createDataFrame(
        [
            ("t", 0, 7, 2, "x", AT_DAY2, None),  # a later batch: dropped, though its offset is lower
            ("t", 1, 9, 1, "x", AT_DAY1, None),  # the first copy
            ("t", 0, 1, 0, "x", AT_DAY1, "bad_value:price"),  # refused, in the earliest batch
            ("t", 0, 2, 1, "y", AT_DAY2, None),
            ("t", 0, 3, 1, "y", AT_DAY2, None),  # same batch and partition, higher offset: dropped
            ("t", 0, 4, 1, None, None, "malformed_json:syntax"),
        ],
        f"{KEY}, ingest_batch BIGINT, event_id STRING, event_time TIMESTAMP, reason STRING",
    )
    quarantine = spark.createDataFrame([("t", 0, 1, "bad_value:price"), ("t", 0, 4, "malformed_json:syntax")],
                                       f"{KEY}, reason STRING")  # fmt: skip
    fates = record_fates(classified, quarantine, None)
    first = {(r.kafka_partition, r.kafka_offset): r.first for r in fates.collect()}
    assert first == {(0, 7): False, (1, 9): True, (0, 1): None, (0, 2): True, (0, 3): False, (0, 4): None}
    names = ("bronze", "quarantine", "poison", "duplicates_removed", "unacked", "no_event_time")

    def counts(intervals):
        return dict(zip(names, fates.agg(*scoped_counts(intervals)).first(), strict=True))

    day2 = Interval(DAY1.end, DAY1.end + dt.timedelta(days=1))
    # Day 1: x's first copy (silver's row) and its refused copy; day 2: x's later copy and y twice.
    assert counts([DAY1]) == dict(bronze=2, quarantine=1, poison=0, duplicates_removed=0, unacked=0, no_event_time=1)
    assert counts([day2]) == dict(bronze=3, quarantine=0, poison=0, duplicates_removed=2, unacked=0, no_event_time=1)
    assert counts(None) == dict(bronze=6, quarantine=2, poison=0, duplicates_removed=2, unacked=0, no_event_time=1)
