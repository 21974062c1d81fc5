"""Count against what the broker acknowledged: nothing accepted may be lost.

An acknowledged record is accounted for when its coordinates are in quarantine, or when the
bronze row at those coordinates carries an event_id that silver holds (this copy or another).
The event_id is the one the shared strict reading gives (eo/runtime/reading.py), never a second,
laxer parse: a record with two event_ids is malformed, not found under either.

Scoped to event-time intervals (a verification of one day), the counts take the records whose
event, as the shared reading reads it, falls in them:
- a bronze record belongs to the interval its event time falls in; one whose event time cannot
  be read (malformed, poison) belongs to none, and is counted only over all event time;
- an acknowledged record that bronze holds belongs where its event falls. One bronze does not
  hold has no event time to place it by: below the end of what the stream read of its partition
  (bronze's highest offset there) it is a hole, lost (or lost at the source, where a person
  accepted a gap), and every interval counts it, as it may be in any; past that end the stream
  has not read it yet, which no interval's check can hold against it;
- a record no producer's ack log names (a producer without one) counts as accepted by bronze,
  reported as such: never a loss, and never a failure of the interval it is in.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from eo.core.intervals import Interval, predicate
from eo.core.source_gaps import Gap
from eo.core.tables import EVENT_ID, EVENT_TIME, INGEST_BATCH, POISON_PREFIX, READ_ID, SOURCE_KEY
from eo.core.transforms.dedup import first_copy_order

ACK_SCHEMA = "topic STRING, partition INT, offset BIGINT, kind STRING"


def read_acks(spark: SparkSession, files: list[str], topic: str) -> DataFrame | None:
    """The producers' ack logs (CSV files), this topic's rows; None if no producer left one."""
    if not files:
        return None
    acks = spark.read.csv(files, header=True, schema=ACK_SCHEMA).where(F.col("topic") == topic)
    return acks.select(
        F.col("topic").alias("kafka_topic"),
        F.col("partition").alias("kafka_partition"),
        F.col("offset").alias("kafka_offset"),
        "kind",
    )


def in_gaps(gaps: Sequence[Gap]) -> Column:
    """A record whose coordinates lie in one of `gaps` (records lost at the source, accepted)."""
    inside = [
        (F.col("kafka_topic") == g.topic)
        & (F.col("kafka_partition") == g.partition)
        & F.col("kafka_offset").between(g.start, g.end - 1)
        for g in gaps
    ]
    return functools.reduce(operator.or_, inside, F.lit(False))


def in_scope(intervals: list[Interval] | None, column: str = "event_time") -> Column:
    """`column` in one of `intervals` (None: all event time, every row); a null time is in none."""
    if intervals is None:
        return F.lit(True)
    return F.coalesce(F.expr(predicate(intervals, column)), F.lit(False))


def account_for_acks(
    acks: DataFrame, classified: DataFrame, silver: DataFrame, quarantine: DataFrame, gaps: Sequence[Gap] = ()
) -> DataFrame:
    """Each acknowledged record with `status`: accounted (found), lost_at_source (not found, and
    inside a gap a person accepted, eo/core/source_gaps.py) or lost, and where it was found:
    `in_bronze`, the `event_time` the shared reading gives it there (null when unreadable or not
    in bronze), and `unread` (not in bronze, past the highest offset bronze holds of its
    partition: the stream has not read that far).

    `classified`: bronze as the shared reading classifies it."""
    key = list(SOURCE_KEY)
    time = F.col(EVENT_TIME) if EVENT_TIME in classified.columns else F.lit(None).cast("timestamp")
    in_bronze = classified.select(*key, READ_ID, time.alias("event_time"), F.lit(True).alias("_bronze"))
    read_up_to = classified.groupBy(*key[:2]).agg(F.max("kafka_offset").alias("_read_up_to"))
    in_silver = silver.select(F.col(EVENT_ID).alias(READ_ID), F.lit(True).alias("_silver")).distinct()
    in_quarantine = quarantine.select(*key, F.lit(True).alias("_quarantine"))
    found = (
        acks.join(in_bronze, on=key, how="left")
        .join(in_quarantine, on=key, how="left")
        .join(in_silver, on=READ_ID, how="left")
        .join(read_up_to, on=key[:2], how="left")
    )
    status = (
        F.when(F.col("_quarantine") | F.col("_silver"), "accounted")
        .when(in_gaps(gaps), "lost_at_source")
        .otherwise("lost")
    )
    bronze_holds = F.coalesce(F.col("_bronze"), F.lit(False))
    unread = ~bronze_holds & (F.col("_read_up_to").isNull() | (F.col("kafka_offset") > F.col("_read_up_to")))
    return found.select(
        *key,
        "kind",
        "event_id",
        status.alias("status"),
        bronze_holds.alias("in_bronze"),
        "event_time",
        unread.alias("unread"),
    )


def acks_in_scope(intervals: list[Interval] | None) -> Column:
    """On an account_for_acks frame: the acknowledged records a check of `intervals` counts (None:
    every one). In bronze: those whose event falls in them. Not in bronze: the holes (lost, or lost
    at the source), which may be of any interval; not those the stream has not read yet."""
    if intervals is None:
        return F.lit(True)
    unplaced = ~F.col("in_bronze") & (~F.col("unread") | (F.col("status") == "lost_at_source"))
    return (F.col("in_bronze") & in_scope(intervals)) | unplaced


def record_fates(classified: DataFrame, quarantine: DataFrame, acks: DataFrame | None) -> DataFrame:
    """One row per bronze record: its coordinates and `event_time` (as the shared reading reads it;
    null when unreadable), `valid`, `first` (the first copy of its event by the first-copy rule,
    eo/core/transforms/dedup.py, over all of bronze; null for a refused record), `quarantined`
    (quarantine holds its coordinates), `poison` (quarantined as poison) and `acked` (a producer's
    ack log names it; null without ack logs)."""
    key = list(SOURCE_KEY)
    time = F.col(EVENT_TIME).alias("event_time")
    records = classified.select(*key, INGEST_BATCH, READ_ID, time, F.col("reason").isNull().alias("valid"))
    order = Window.partitionBy(READ_ID, "valid").orderBy(*first_copy_order())  # valid copies only compete
    ranked = records.withColumn("first", F.when(F.col("valid"), F.row_number().over(order) == 1))
    held = quarantine.select(
        *key, F.lit(True).alias("quarantined"), F.col("reason").startswith(POISON_PREFIX).alias("_poison")
    )
    fates = ranked.join(held, on=key, how="left")
    if acks is not None:
        fates = fates.join(acks.select(*key).distinct().withColumn("acked", F.lit(True)), on=key, how="left")
        acked = F.coalesce(F.col("acked"), F.lit(False))
    else:
        acked = F.lit(None).cast("boolean")
    return fates.select(
        *key,
        "event_time",
        "valid",
        "first",
        F.coalesce(F.col("quarantined"), F.lit(False)).alias("quarantined"),
        F.coalesce(F.col("_poison"), F.lit(False)).alias("poison"),
        acked.alias("acked"),
    )


def scoped_counts(intervals: list[Interval] | None) -> list[Column]:
    """The aggregate columns of a check of `intervals` over a record_fates frame (one Spark job): bronze,
    quarantine, poison, duplicates_removed (valid copies that are not their event's first), unacked
    (in bronze, named by no ack log), no_event_time (in bronze, no readable event time: in no
    interval)."""
    scope = in_scope(intervals)

    def count(condition: Column, name: str) -> Column:
        return F.sum(F.when(condition, 1).otherwise(0)).cast("bigint").alias(name)

    return [
        count(scope, "bronze"),
        count(scope & F.col("quarantined"), "quarantine"),
        count(scope & F.col("poison"), "poison"),
        count(scope & F.col("valid") & ~F.col("first"), "duplicates_removed"),
        count(scope & ~F.coalesce(F.col("acked"), F.lit(True)), "unacked"),
        count(F.col("event_time").isNull(), "no_event_time"),
    ]
