"""The two streaming queries, each with its own checkpoint directory.

ingest: Kafka -> bronze, foreachBatch inserting records missing by source coordinates.
refine: bronze -> silver + quarantine + gold (+ PostgreSQL), foreachBatch with idempotent MERGEs.
Both fence their commits with this instance's epoch when given one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from jobs import lake
from jobs.config import Settings
from jobs.fencing import Fence
from jobs.sinks.postgres import PostgresSink
from jobs.tables import BRONZE
from streaming.ingest import IngestBatch
from streaming.refine import RefineBatch
from streaming.unguarded import UnguardedIngest, UnguardedRefine

QUERIES = ("ingest", "refine")


@dataclass(frozen=True)
class Knobs:
    """Execution knobs. None may change a gold row (DESIGN.md invariant 6), `guarantees` aside."""

    until_caught_up: bool = False
    trigger_seconds: float = 5.0
    max_offsets_per_trigger: int | None = None
    max_files_per_trigger: int | None = None
    # Benchmarks only (streaming/unguarded.py): plain appends, no dedup; gold is then NOT exact.
    guarantees: bool = True


def _trigger(knobs: Knobs) -> dict:
    if knobs.until_caught_up:
        return {"availableNow": True}
    return {"processingTime": f"{knobs.trigger_seconds} seconds"}


def bootstrap_offsets(spark: SparkSession, settings: Settings, partitions: list[int]) -> str:
    """Where a fresh ingest checkpoint starts: right after what bronze already holds.

    So resetting the ingest checkpoint never writes an offset into bronze twice.
    """
    bronze = lake.read(spark, settings, BRONZE).where(F.col("kafka_topic") == settings.topic)
    done = {
        r.kafka_partition: r.last + 1
        for r in bronze.groupBy("kafka_partition").agg(F.max("kafka_offset").alias("last")).collect()
    }
    return json.dumps({settings.topic: {str(p): done.get(p, -2) for p in partitions}})


def start_ingest(
    spark: SparkSession, settings: Settings, knobs: Knobs, partitions: list[int], fence: Fence | None = None
):
    checkpoint = settings.checkpoint_path("ingest")
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", settings.kafka_bootstrap)
        .option("subscribe", settings.topic)
        # Loud, not silent, if Kafka's retention deleted records before bronze got them.
        .option("failOnDataLoss", "true")
    )
    if not lake.exists(spark, checkpoint):
        reader = reader.option("startingOffsets", bootstrap_offsets(spark, settings, partitions))
    if knobs.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(knobs.max_offsets_per_trigger))
    records = reader.load().select(
        F.col("key").cast("string").alias("key"),
        "value",
        F.col("topic").alias("kafka_topic"),
        F.col("partition").alias("kafka_partition"),
        F.col("offset").alias("kafka_offset"),
        F.col("timestamp").alias("kafka_timestamp"),
    )
    return (
        records.writeStream.queryName("ingest")
        .foreachBatch(IngestBatch(settings, fence) if knobs.guarantees else UnguardedIngest(settings))
        .option("checkpointLocation", checkpoint)
        .trigger(**_trigger(knobs))
        .start()
    )


def start_refine(
    spark: SparkSession,
    settings: Settings,
    knobs: Knobs,
    fence: Fence | None = None,
    sinks: list[PostgresSink] | None = None,
):
    reader = spark.readStream.format("delta")
    if knobs.max_files_per_trigger:
        reader = reader.option("maxFilesPerTrigger", str(knobs.max_files_per_trigger))
    return (
        reader.load(settings.table_path(BRONZE.name))
        .writeStream.queryName("refine")
        .foreachBatch(RefineBatch(settings, fence, sinks or []) if knobs.guarantees else UnguardedRefine(settings))
        .option("checkpointLocation", settings.checkpoint_path("refine"))
        .trigger(**_trigger(knobs))
        .start()
    )
