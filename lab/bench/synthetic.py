"""Benchmark data made by Spark, millions of rows a second, as column expressions of a row number.

- `ysb_records`: Yahoo-Streaming-Benchmark events for a Kafka topic (event time in order per
  partition, every partition spanning the same time).
- `clickstream_records`: this platform's clickstream as Kafka records (key, value, partition),
  with 3% duplicates (same event id, same payload) and 1% broken JSON.
- `bronze_log`: the same records in bronze's shape, for rebuilding without going through Kafka.
- `silver_history`: valid, deduplicated events in silver's shape, for the history experiment.
- `live_records`: records for a live load (latency, fixed cost, recovery): event times that track
  the time they are sent at, a fixed user population, ids that never repeat across loads.

Density is fixed (events per day), so a bigger log is a longer history, as in production.
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from eo.core.reference import ADS_PER_CAMPAIGN, CAMPAIGN_COUNT
from eo.core.sources import UNKNOWN_FIELDS
from eo.core.tables import RECORD_COLUMNS, SILVER

PARTITIONS = 4
PER_DAY = 1_000_000  # events per event-time day
DUPLICATE_PERCENT = 3
MALFORMED_PERCENT = 1
YSB_EVENT_TYPES = ("view", "click", "purchase")
YSB_AD_TYPES = ("banner", "modal", "sponsored-search", "mail", "mobile")


def _h(col: Column | str, salt: int, modulo: int) -> Column:
    """A deterministic pseudo-random integer in [0, modulo) from a column and a salt."""
    return F.pmod(F.xxhash64(F.col(col) if isinstance(col, str) else col, F.lit(salt)), F.lit(modulo))


def _ids(spark: SparkSession, count: int) -> DataFrame:
    return spark.range(0, count, 1, max(PARTITIONS, count // 1_000_000))


def ysb_records(spark: SparkSession, count: int, start: dt.datetime, per_second: int = 10_000) -> DataFrame:
    """(partition, value) rows: Kafka partition p holds every 4th event, in event-time order."""
    ids = _ids(spark, count).withColumn("p", F.col("id") % PARTITIONS)
    start_ms = int(start.timestamp() * 1000)
    event = F.struct(
        F.format_string("u%06d", _h("id", 1, 100_000)).alias("user_id"),
        F.format_string("p%05d", _h("id", 2, 10_000)).alias("page_id"),
        F.format_string("a%03d-%d", _h("id", 3, CAMPAIGN_COUNT), _h("id", 4, ADS_PER_CAMPAIGN)).alias("ad_id"),
        F.element_at(F.array(*map(F.lit, YSB_AD_TYPES)), (_h("id", 5, 5) + 1).cast("int")).alias("ad_type"),
        F.element_at(F.array(*map(F.lit, YSB_EVENT_TYPES)), (_h("id", 6, 3) + 1).cast("int")).alias("event_type"),
        (F.lit(start_ms) + (F.col("id") * 1000 / per_second).cast("long")).alias("event_time"),
        F.format_string("10.0.%d.%d", _h("id", 7, 256), _h("id", 8, 256)).alias("ip_address"),
    )
    # Sorted by (partition, id): each writing task sends its partition's events in time order.
    return (
        ids.select(F.col("p").cast("int").alias("partition"), "id", F.to_json(event).alias("value"))
        .repartition(PARTITIONS, "partition")
        .sortWithinPartitions("id")
        .drop("id")
    )


def _fields(
    spark: SparkSession,
    count: int,
    start: dt.datetime,
    per_day: int,
    users: int | None = None,
    first: int = 0,
    duplicate_percent: int = DUPLICATE_PERCENT,
    malformed_percent: int = MALFORMED_PERCENT,
) -> DataFrame:
    """One row per Kafka record (ids first .. first + count - 1): the event's fields, `duplicate`
    and `broken` flags."""
    users = users or max(1_000, per_day // 40)
    ids = spark.range(first, first + count, 1, max(PARTITIONS, count // 1_000_000))
    # A duplicate re-sends an earlier event of the same range (same id, same payload); its own offset is new.
    duplicate = _h("id", 11, 100) < duplicate_percent
    source = F.when(duplicate, F.greatest(F.lit(first), F.col("id") - 1 - _h("id", 12, 5_000))).otherwise(F.col("id"))
    ids = ids.withColumn("src", source).withColumn("duplicate", duplicate)
    offset_ms = ((F.col("src") - F.lit(first)) * 86_400_000 / per_day).cast("long")
    event_ms = F.lit(int(start.timestamp() * 1000)) + offset_ms
    kind = _h("src", 14, 100)
    event_type = F.when(kind < 3, "purchase").when(kind < 15, "click").otherwise("impression")
    campaign = _h("src", 15, CAMPAIGN_COUNT)
    user = _h("src", 13, users)
    event_id = F.format_string("%012x-%016x", event_ms, F.xxhash64("src"))
    return ids.select(
        "id",
        "duplicate",
        (_h("id", 18, 100) < malformed_percent).alias("broken"),
        event_id.alias("event_id"),
        event_type.alias("event_type"),
        F.timestamp_millis(event_ms).alias("event_time"),
        F.format_string("u%06d", user).alias("user_id"),
        F.format_string("s%06d-%d", user, ((F.col("src") - F.lit(first)) * 48 / per_day).cast("long")).alias(
            "session_id"
        ),
        F.format_string("c%03d", campaign).alias("campaign_id"),
        F.format_string("a%03d-%d", campaign, _h("src", 16, ADS_PER_CAMPAIGN)).alias("ad_id"),
        F.when(event_type == "purchase", (_h("src", 17, 50_000) + 1) / 100).cast("decimal(10,2)").alias("price"),
        _h(event_id, 19, PARTITIONS).cast("int").alias("kafka_partition"),
    )


def _clickstream(fields: DataFrame, topic: str) -> DataFrame:
    """Bronze-shaped rows: the fields as the producer's JSON, the broken ones cut short."""
    iso = F.date_format("event_time", "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'")
    payload = F.to_json(
        F.struct(
            "event_id",
            "event_type",
            iso.alias("event_time"),
            "user_id",
            "session_id",
            "campaign_id",
            "ad_id",
            F.col("price").cast("string").alias("price"),
        )
    )
    value = F.when(F.col("broken"), F.substring(payload, 1, 40)).otherwise(payload)
    return fields.select(
        F.col("event_id").alias("key"),
        value.cast("binary").alias("value"),
        F.lit(topic).alias("kafka_topic"),
        "kafka_partition",
        F.col("id").alias("kafka_offset"),
        F.col("event_time").alias("kafka_timestamp"),
        "broken",
    )


def clickstream_records(spark: SparkSession, count: int, start: dt.datetime, per_day: int = PER_DAY) -> DataFrame:
    """(key, value, partition) for a Kafka write: all copies of an event in one partition."""
    rows = _clickstream(_fields(spark, count, start, per_day), topic="")
    return rows.select("key", "value", F.col("kafka_partition").alias("partition"))


def kafka_bytes(records: DataFrame) -> int:
    """The bytes of Kafka records (key and value) a DataFrame for a Kafka write holds."""
    size = F.octet_length("value") + F.coalesce(F.octet_length("key"), F.lit(0))
    return int(records.select(F.sum(size)).first()[0] or 0)


def bronze_log(
    spark: SparkSession, count: int, start: dt.datetime, topic: str = "bench-log", per_day: int = PER_DAY
) -> DataFrame:
    return _clickstream(_fields(spark, count, start, per_day), topic).select(*RECORD_COLUMNS)


def silver_history(spark: SparkSession, count: int, end: dt.datetime, per_day: int = PER_DAY) -> DataFrame:
    """About `count` valid, distinct events in silver's shape, ending at `end` (topic bench-history)."""
    start = end - dt.timedelta(days=count / per_day)
    fields = _fields(spark, count, start, per_day).where(~F.col("duplicate") & ~F.col("broken"))
    return fields.select(
        "*",
        F.to_date("event_time").alias("event_date"),
        F.lit("bench-history").alias("kafka_topic"),
        F.col("id").alias("kafka_offset"),
        F.col("event_time").alias("kafka_timestamp"),
        F.lit(None).cast("array<string>").alias(UNKNOWN_FIELDS),
    ).select(*SILVER.columns)


def live_records(
    spark: SparkSession, count: int, start: dt.datetime, per_second: float, users: int, first: int, clean: bool = False
) -> DataFrame:
    """Records for a live load: event times from `start` at `per_second` (they track the time they
    are sent at), `users` users; ids from `first`, so successive loads never share an event.
    (key, value, partition, broken); `clean`: no duplicates, no broken records."""
    fields = _fields(
        spark,
        count,
        start,
        per_day=max(1, round(per_second * 86_400)),
        users=users,
        first=first,
        duplicate_percent=0 if clean else DUPLICATE_PERCENT,
        malformed_percent=0 if clean else MALFORMED_PERCENT,
    )
    rows = _clickstream(fields, topic="")
    # In id order, so in event-time order: Spark's range keeps it through these projections.
    return rows.select("key", "value", F.col("kafka_partition").alias("partition"), "broken")


def days_before_today(events: int, per_day: int = PER_DAY) -> dt.datetime:
    """A start for `events` at `per_day` that ends before today (UTC): Kafka-loaded events are valid
    only up to their Kafka timestamp (the load time) plus a small skew."""
    today = dt.datetime.now(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return today - dt.timedelta(days=-(-events // per_day) + 1)
