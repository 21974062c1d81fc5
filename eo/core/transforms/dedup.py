"""Deduplication by event id, across all history: one definition of "the first copy".

The first copy of an event is the one bronze ingested first: the lowest (ingest batch, topic,
partition, offset). Bronze records the stream micro-batch that ingested each record
(eo/core/tables.py INGEST_BATCH), so the rule holds wherever producers put the copies: on one
partition or on several, in one micro-batch or in two, before or after a restart.

- The batch rebuild reads bronze and keeps that copy with `first_copies`.
- The stream applies the same rule as it goes, with `first_copy_state` (Spark's own
  deduplication, RocksDB state): a key seen in an earlier micro-batch is dropped, and of the
  copies of a new key within one micro-batch the lowest (partition, offset) of the one topic the
  query reads wins.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from eo.core.tables import INGEST_BATCH, SILVER, SOURCE_KEY


def first_copy_order() -> list[Column]:
    """Earliest first: records ingested before bronze recorded batches (null) came first."""
    return [F.col(INGEST_BATCH).asc_nulls_first(), *(F.col(c).asc() for c in SOURCE_KEY)]


def first_copies(events: DataFrame) -> DataFrame:
    """One row per silver key: the copy with the lowest (ingest batch, topic, partition, offset)."""
    order = Window.partitionBy(*SILVER.key).orderBy(*first_copy_order())
    ranked = events.withColumn("_copy", F.row_number().over(order))
    return ranked.where(F.col("_copy") == 1).drop("_copy", INGEST_BATCH)


def first_copy_state(rows: DataFrame, key: str, seed: str) -> DataFrame:
    """The streaming side of the rule: the first copy of each `key`, once, across micro-batches.

    `seed` (a boolean column): a row the lake already holds (after a reset). It wins over any live
    copy of its key and is passed on, so that what follows counts it before dropping it."""
    # Spark's deduplication keeps the first row of a key that its task meets, and shuffle blocks
    # arrive in any order: each shuffle partition is sorted into arrival order first (seed rows,
    # then partition and offset). Spark refuses a sort in a streaming plan when a query starts;
    # queries of this plan start through `streaming.plan.start_checked`, which checks the rest.
    _topic, partition, offset = SOURCE_KEY
    arrival = [F.when(F.col(seed), F.lit(-1)).otherwise(F.col(partition)), F.col(offset)]
    return rows.repartition(key).sortWithinPartitions(*arrival).dropDuplicates([key])


def check_streaming_plan(plan: DataFrame) -> None:
    """Spark's checks of a streaming plan (an AnalysisException if it cannot run), but for the sort
    of `first_copy_state` (jvm/reader ArrivalOrder)."""
    plan.sparkSession._jvm.io.effectivelyonce.reader.ArrivalOrder.check(plan._jdf)
