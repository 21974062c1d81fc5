"""The one reading of raw records: stream, batch rebuild and verification all call this.

It binds the pure rules of eo/core/transforms/parse.py to this deployment's reference tables and
domain bounds, so no caller can classify a record with other data or other bounds. Records the
stream isolated as poison are quarantined unread, with the reason it recorded.

Both the catalogue (campaigns and their ads) and the poison list are small and read once, then
go into the plan as literals: a stream that runs for days never rescans them, and a micro-batch
runs no Spark job to broadcast them (three such jobs a batch, docs/history/hot-path-journal.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from eo.core.tables import ADS, CAMPAIGNS, INGEST_BATCH, POISON_PREFIX, QUARANTINE, SOURCE_KEY
from eo.core.transforms.parse import Catalogue, Domains, classify, parse_events
from eo.runtime import lake
from eo.runtime.config import Settings
from eo.runtime.environment import environment
from eo.runtime.hooks import hooks

# What a poison record's quarantine row holds: its coordinates, then what replaces its reading.
POISON_COLUMNS = (*SOURCE_KEY, "reason", "key", "raw_value")
Poison = Sequence[tuple]  # rows of POISON_COLUMNS


def domains(settings: Settings) -> Domains:
    return Domains.from_conf(settings.domains)


def catalogue(settings: Settings) -> Catalogue:
    """Each campaign with its ads, from the reference tables (they change only with a deploy,
    which restarts the stream). Read with delta-rs: two small tables, no Spark job."""
    env = environment(settings)
    owned: dict[str, list[str]] = {}
    ads, campaign_table = env.table(ADS.name), env.table(CAMPAIGNS.name)
    ads.refresh()
    campaign_table.refresh()
    for row in env.rows(ads, ["ad_id", "campaign_id"]).to_pylist():
        owned.setdefault(row["campaign_id"], []).append(row["ad_id"])
    campaigns = env.rows(campaign_table, ["campaign_id"])
    return {campaign: sorted(owned.get(campaign, [])) for campaign in campaigns["campaign_id"].to_pylist()}


def _poison_map(poison: Poison) -> Column:
    """(topic, partition, offset) -> (reason, key, raw_value) of each poison record."""
    entries = []
    for topic, partition, offset, *texts in poison:
        where = (F.lit(topic), F.lit(partition).cast("int"), F.lit(offset).cast("bigint"))
        texts = (F.lit(text).cast("string") for text in texts)
        entries += [
            F.struct(*(v.alias(c) for v, c in zip(where, SOURCE_KEY, strict=True))),
            F.struct(*(v.alias(c) for v, c in zip(texts, POISON_COLUMNS[3:], strict=True))),
        ]
    return F.create_map(*entries)


def classify_records(
    spark: SparkSession, settings: Settings, raw: DataFrame, poison: Poison = (), known: Catalogue | None = None
) -> DataFrame:
    """Bronze-shaped rows -> parsed, typed and classified rows (`reason` null when valid).

    `poison`: records to quarantine without reading them (rows of POISON_COLUMNS): each is read as
    if it were empty, then its reading is replaced by the poison's quarantine row. Without poison
    the plan has no trace of it (a stream may restart with new poison: no state depends on it).
    `known`: the catalogue (read now when not given)."""
    known = catalogue(settings) if known is None else known
    if not poison:
        return classify(parse_events(hooks().source(raw), domains(settings)), known)
    found = F.try_element_at(_poison_map(poison), F.struct(*SOURCE_KEY))
    readable = raw.withColumn("value", F.when(found.isNull(), F.col("value")))
    classified = classify(parse_events(hooks().source(readable), domains(settings)), known)
    kept = (*SOURCE_KEY, INGEST_BATCH, "kafka_timestamp")
    columns = {c: F.when(found.isNull(), F.col(c)) for c in classified.columns if c not in kept}
    columns.update({c: F.coalesce(found[c], F.col(c)) for c in POISON_COLUMNS[3:]})
    return classified.select(*(columns.get(c, F.col(c)).alias(c) for c in classified.columns))


def recorded_poison(spark: SparkSession, settings: Settings) -> list[tuple]:
    """What the stream isolated as poison so far (rows of POISON_COLUMNS); usually none."""
    quarantine = lake.read(spark, settings, QUARANTINE)
    poison = quarantine.where(F.col("reason").startswith(POISON_PREFIX)).select(*POISON_COLUMNS)
    return [tuple(row) for row in poison.collect()]
