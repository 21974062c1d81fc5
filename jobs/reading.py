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
from jobs.transforms.parse import Domains, classify, isolated, parse_events


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

    `poison`: (source coordinates, reason) of records to quarantine without reading them.
    """
    campaigns, ads = reference(spark, settings, local_reference)
    if poison is None:
        return classify(parse_events(faults.poisoned(raw), domains(settings)), campaigns, ads)
    readable = raw.join(F.broadcast(poison.select(*SOURCE_KEY)), on=list(SOURCE_KEY), how="left_anti")
    classified = classify(parse_events(faults.poisoned(readable), domains(settings)), campaigns, ads)
    return classified.unionByName(isolated(raw, poison))


def recorded_poison(spark: SparkSession, settings: Settings) -> DataFrame | None:
    """What the stream isolated as poison so far; None when nothing (the usual case)."""
    quarantine = lake.read(spark, settings, QUARANTINE)
    poison = quarantine.where(F.col("reason").startswith(POISON_PREFIX)).select(*SOURCE_KEY, "reason")
    return None if poison.isEmpty() else poison.persist()
