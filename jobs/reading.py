"""The one reading of raw records: stream, batch rebuild and verification all call this.

It binds the pure rules of jobs/transforms/parse.py to this deployment's reference tables and
domain bounds, so no caller can classify a record with other data or other bounds. Records the
stream isolated as poison are quarantined unread, with the reason it recorded.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs import faults, lake
from jobs.config import Settings
from jobs.tables import ADS, CAMPAIGNS, POISON_PREFIX, QUARANTINE, SOURCE_KEY
from jobs.transforms.parse import Domains, classify, parse_events

# What a poison record's quarantine row holds: its coordinates, then what replaces its reading.
POISON_COLUMNS = (*SOURCE_KEY, "reason", "key", "raw_value")


def domains(settings: Settings) -> Domains:
    return Domains.from_conf(settings.domains)


def reference(spark: SparkSession, settings: Settings, local: bool = False) -> tuple[DataFrame, DataFrame]:
    """The campaigns and ads tables; `local`: read once into the plan (a stream that runs for days
    must not rescan them every micro-batch; they change only with a deploy, which restarts it)."""
    tables = [lake.read(spark, settings, table) for table in (CAMPAIGNS, ADS)]
    if not local:
        return tables[0], tables[1]
    campaigns, ads = (spark.createDataFrame(t.collect(), t.schema) for t in tables)
    return campaigns, ads


def classify_records(
    spark: SparkSession,
    settings: Settings,
    raw: DataFrame,
    poison: DataFrame | None = None,
    local_reference: bool = False,
) -> DataFrame:
    """Bronze-shaped rows -> parsed, typed and classified rows (`reason` null when valid).

    `poison`: records to quarantine without reading them (source coordinates, reason, key and
    raw_value: POISON_COLUMNS). The plan has the same shape with or without any, so that a stream
    restarted with new poison resumes from its checkpoint: each record is read once, a poison one
    as if it were empty, and then its reading is replaced by the poison's quarantine row.
    """
    campaigns, ads = reference(spark, settings, local_reference)
    if poison is None:
        return classify(parse_events(faults.poisoned(raw), domains(settings)), campaigns, ads)
    listed = F.broadcast(poison.select(*SOURCE_KEY, F.lit(True).alias("_poisoned")))
    readable = raw.join(listed, on=list(SOURCE_KEY), how="left")
    readable = readable.withColumn("value", F.when(F.col("_poisoned").isNull(), F.col("value"))).drop("_poisoned")
    classified = classify(parse_events(faults.poisoned(readable), domains(settings)), campaigns, ads)
    found = F.broadcast(poison.select(*SOURCE_KEY, *(F.col(c).alias(f"_poison_{c}") for c in POISON_COLUMNS[3:])))
    joined = classified.join(found, on=list(SOURCE_KEY), how="left")
    poisoned = F.col("_poison_reason").isNotNull()
    overrides = {
        c: F.when(~poisoned, F.col(c)) for c in classified.columns if c not in (*SOURCE_KEY, "kafka_timestamp")
    }
    overrides.update({c: F.coalesce(F.col(f"_poison_{c}"), F.col(c)) for c in POISON_COLUMNS[3:]})
    return joined.select(*(overrides.get(c, F.col(c)).alias(c) for c in classified.columns))


def recorded_poison(spark: SparkSession, settings: Settings) -> DataFrame | None:
    """What the stream isolated as poison so far; None when nothing (the usual case)."""
    quarantine = lake.read(spark, settings, QUARANTINE)
    poison = quarantine.where(F.col("reason").startswith(POISON_PREFIX)).select(*POISON_COLUMNS)
    return None if poison.isEmpty() else poison.persist()
