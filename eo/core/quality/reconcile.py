"""Count against what the broker acknowledged: nothing accepted may be lost.

An acknowledged record is accounted for when its coordinates are in quarantine, or when the
bronze row at those coordinates carries an event_id that silver holds (this copy or another).
The event_id is the one the shared strict reading gives (eo/runtime/reading.py), never a second,
laxer parse: a record with two event_ids is malformed, not found under either.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from eo.core.source_gaps import Gap
from eo.core.tables import SOURCE_KEY

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


def account_for_acks(
    acks: DataFrame, classified: DataFrame, silver: DataFrame, quarantine: DataFrame, gaps: Sequence[Gap] = ()
) -> DataFrame:
    """Each acknowledged record with `status`: accounted (found), lost_at_source (not found, and
    inside a gap a person accepted, eo/core/source_gaps.py) or lost, and where it was found.

    `classified`: bronze as the shared reading classifies it."""
    key = list(SOURCE_KEY)
    in_bronze = classified.select(*key, "event_id")
    in_silver = silver.select("event_id", F.lit(True).alias("_silver")).distinct()
    in_quarantine = quarantine.select(*key, F.lit(True).alias("_quarantine"))
    found = (
        acks.join(in_bronze, on=key, how="left")
        .join(in_quarantine, on=key, how="left")
        .join(in_silver, on="event_id", how="left")
    )
    status = (
        F.when(F.col("_quarantine") | F.col("_silver"), "accounted")
        .when(in_gaps(gaps), "lost_at_source")
        .otherwise("lost")
    )
    return found.select(*key, "kind", "event_id", status.alias("status"))
