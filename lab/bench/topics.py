"""The bench's Kafka topics: made fresh for a phase, loaded from a DataFrame, read once to warm
the broker (lab/bench/runner.py wires them)."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from eo.runtime.config import Settings
from eo.runtime.kafka_admin import delete_topic, end_offsets, ensure_topic
from streaming.plan import kafka_records_between


def fresh(settings: Settings, name: str) -> Settings:
    """Topic `name`, deleted and created again: empty, or an error."""
    settings = settings.with_overrides(topic=name)
    delete_topic(settings)
    ensure_topic(settings)
    left = sum(end_offsets(settings).values())
    if left:  # an earlier run's records would be read as this one's
        raise RuntimeError(f"topic {name} holds {left:,} records after its deletion and re-creation")
    return settings


def load(settings: Settings, records: DataFrame) -> int:
    """`records` (key, value) written to the topic; how many records it then holds."""
    writer = records.write.format("kafka").option("kafka.bootstrap.servers", settings.kafka_bootstrap)
    writer.option("topic", settings.topic).save()
    return sum(end_offsets(settings).values())


def read_once(spark: SparkSession, settings: Settings) -> None:
    """Every record of a freshly loaded topic read once, untimed, before the timed jobs read it:
    the first reader otherwise pays the broker's own warm-up. The guarded job, which runs first,
    cost the broker 3.0 and 2.4 CPU seconds in its first two batches, the later jobs 1.1-1.5 and
    0.9-1.1 for the same records (2026-11-29, docs/hot-path.md)."""
    everything = kafka_records_between(spark, settings, "earliest", "latest")  # the job's own batch read
    everything.write.format("noop").mode("overwrite").save()
