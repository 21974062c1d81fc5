"""The Yahoo Streaming Benchmark query, from one pre-loaded Kafka topic, in Spark two ways.

Query: keep `view` events, join ad -> campaign, count per campaign and 10-second event-time window.
- exactly-once: this platform's way (eo/runtime/commits.py, as the streaming job commits gold). Each
  micro-batch's counts reach Python as Arrow and are added to a Delta table by a delta-rs MERGE
  carrying the batch's transaction id, so a replayed batch is skipped, never added twice.
- raw: the same query with no idempotence and no table: each batch's counts are summed in the
  driver (the floor: what Spark costs without any guarantee).
PyFlink runs the same query in lab/bench/flink.py; all three must produce the same counts.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from eo.core.reference import ADS_PER_CAMPAIGN, CAMPAIGN_COUNT
from eo.runtime import commits
from eo.runtime.config import Settings

WINDOW_MS = 10_000
EVENT_SCHEMA = (
    "user_id STRING, page_id STRING, ad_id STRING, ad_type STRING, event_type STRING, event_time BIGINT, "
    "ip_address STRING"
)
COUNTS_DDL = "campaign_id STRING, window_start BIGINT, views BIGINT"
Counts = dict[tuple[str, int], int]


def ad_rows() -> list[tuple[str, str]]:
    """ad_id -> campaign_id: YSB's 100 campaigns of 10 ads, named as this platform names them."""
    return [(f"a{c:03d}-{j}", f"c{c:03d}") for c in range(CAMPAIGN_COUNT) for j in range(ADS_PER_CAMPAIGN)]


def campaign_window_views(records: DataFrame, ads: DataFrame) -> DataFrame:
    """Kafka records (value = YSB JSON) -> (campaign_id, window_start ms, views)."""
    events = records.select(F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("e")).select("e.*")
    views = events.where(F.col("event_type") == "view").join(F.broadcast(ads), on="ad_id")
    window = (F.col("event_time") - F.col("event_time") % WINDOW_MS).alias("window_start")
    return views.groupBy("campaign_id", window).agg(F.count(F.lit(1)).alias("views"))


class RawSink:
    """No idempotence, no table: the batch's counts are added up in the driver."""

    def __init__(self, ads: DataFrame) -> None:
        self.ads = ads
        self.counts: Counter = Counter()

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        for row in campaign_window_views(batch, self.ads).collect():
            self.counts[(row.campaign_id, row.window_start)] += row.views


class ExactlyOnceSink:
    """Each batch's counts added to a Delta table by delta-rs under the batch's transaction id."""

    def __init__(self, ads: DataFrame, path: str) -> None:
        self.ads = ads
        self.table = commits.Table(path)
        # Stable across restarts of the query, so a replayed batch carries the same transaction id.
        self.app_id = f"ysb-counts:{path}"

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        counts = campaign_window_views(batch, self.ads).toArrow()
        txn = commits.Txn(self.app_id, 0, batch_id + 1)
        commits.accumulate(self.table, counts, ("campaign_id", "window_start"), ["views"], txn)

    def counts(self) -> Counts:
        rows = self.table.refresh().to_pyarrow_table().to_pylist()
        return {(r["campaign_id"], r["window_start"]): r["views"] for r in rows}


def create_counts_table(spark: SparkSession, path: str) -> None:
    from delta.tables import DeltaTable
    from pyspark.sql.types import StructType

    DeltaTable.createIfNotExists(spark).location(path).addColumns(StructType.fromDDL(COUNTS_DDL)).execute()


def warm_up(spark: SparkSession, settings: Settings, topic: str, records: int) -> float:
    """The query once over the topic's first records, nothing kept: the first timed run would
    otherwise pay the JVM's warm-up (class loading, code generation, JIT) for both. Seconds."""
    began = time.monotonic()
    ads = spark.createDataFrame(ad_rows(), "ad_id STRING, campaign_id STRING")
    reader = spark.read.format("kafka").option("kafka.bootstrap.servers", settings.kafka_bootstrap)
    first = reader.option("subscribe", topic).option("startingOffsets", "earliest").load().limit(records)
    campaign_window_views(first, ads).collect()
    return round(time.monotonic() - began, 1)


def run_spark(spark: SparkSession, settings: Settings, topic: str, mode: str, workdir: Path, max_offsets: int) -> dict:
    """Read the whole topic as micro-batches of `max_offsets` records; events/s and the counts."""
    ads = spark.createDataFrame(ad_rows(), "ad_id STRING, campaign_id STRING").cache()
    table = str(workdir / f"ysb-{mode}" / "counts")
    if mode == "exactly-once":
        create_counts_table(spark, table)
        sink = ExactlyOnceSink(ads, table)
    else:
        sink = RawSink(ads)
    records = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", settings.kafka_bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(max_offsets))
        .load()
    )
    started = time.monotonic()
    query = (
        records.writeStream.queryName(f"ysb-{mode}")
        .foreachBatch(sink)
        .option("checkpointLocation", str(workdir / f"ysb-{mode}" / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    seconds = time.monotonic() - started
    progress = query.recentProgress
    events = sum(p["numInputRows"] for p in progress)
    counts = sink.counts() if mode == "exactly-once" else dict(sink.counts)
    batch_seconds = [p["durationMs"].get("triggerExecution", 0) / 1000 for p in progress if p["numInputRows"]]
    return {
        "system": f"spark-{mode}",
        "events": events,
        "seconds": round(seconds, 2),
        "events_per_s": round(events / seconds) if seconds else None,
        "batches": len(batch_seconds),
        "batch_seconds_median": sorted(batch_seconds)[len(batch_seconds) // 2] if batch_seconds else None,
        "counts": counts,
    }


def compare_counts(results: list[dict]) -> dict:
    """Do all systems agree on every (campaign, window) count? A disagreement says where."""
    reference = results[0]["counts"]
    differing = {
        r["system"]: sorted(k for k in set(reference) | set(r["counts"]) if reference.get(k) != r["counts"].get(k))
        for r in results[1:]
    }
    samples = {
        system: [{"key": list(k), results[0]["system"]: reference.get(k), system: counts.get(k)} for k in keys[:3]]
        for (system, keys), counts in zip(differing.items(), (r["counts"] for r in results[1:]), strict=True)
        if keys
    }
    return {
        "windows": len(reference),
        "views": sum(reference.values()),
        "views_per_system": {r["system"]: sum(r["counts"].values()) for r in results},
        "disagreeing_windows": {system: len(keys) for system, keys in differing.items()},
        "samples": samples,
        "agree": all(not keys for keys in differing.values()),
    }
