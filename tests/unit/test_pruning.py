"""Event-time intervals for file skipping: merged, capped, and never narrower than asked."""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.testing import assertDataFrameEqual

from jobs.pruning import merged, within

pytestmark = pytest.mark.unit

T0 = dt.datetime(2026, 11, 5, 12, 0)


def at(minute: float) -> dt.datetime:
    return T0 + dt.timedelta(minutes=minute)


def test_overlapping_and_touching_intervals_merge():
    spans = [(at(5), at(6)), (at(0), at(1)), (at(1), at(2)), (at(1.5), at(3))]
    assert merged(spans) == [(at(0), at(3)), (at(5), at(6))]


def test_beyond_the_cap_the_closest_neighbours_are_bridged():
    # Gaps after each interval: 1, 10, 2, 30 minutes; a cap of 3 bridges the two smallest.
    spans = [(at(0), at(1)), (at(2), at(3)), (at(13), at(14)), (at(16), at(17)), (at(47), at(48))]
    assert merged(spans, most=3) == [(at(0), at(3)), (at(13), at(17)), (at(47), at(48))]


def test_capped_intervals_still_cover_every_input():
    spans = [(at(i * 7 % 50), at(i * 7 % 50 + 0.5)) for i in range(50)]
    out = merged(spans, most=4)
    assert len(out) <= 4
    assert all(any(s >= a and e <= b for a, b in out) for s, e in spans)


def test_within_keeps_the_rows_in_any_interval(spark):
    rows = spark.createDataFrame([(at(m),) for m in (0, 0.5, 1, 4, 5.5, 9)], "event_time TIMESTAMP")
    kept = rows.where(within("event_time", [(at(0), at(1)), (at(5), at(6))]))
    assertDataFrameEqual(kept, spark.createDataFrame([(at(0),), (at(0.5),), (at(5.5),)], "event_time TIMESTAMP"))
    assert rows.where(within("event_time", [])).count() == 0
