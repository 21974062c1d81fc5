"""Raw Kafka records -> typed events, each with a quarantine reason or none.

The one strict reading of a record, shared by stream, batch and verification (docs/bad-input.md).
A record is read in one pass in the JVM by a Java UDF (jvm/reader, io.effectivelyonce.reader.ReadEvent,
Jackson's streaming parser), so stream and batch classify a record identically and no record value
crosses into Python to be read. The UDF returns the typed fields and the first rule broken.

Reasons, first match wins, in this order:
1. the record: malformed_json:{empty,too_large,invalid_utf8,repeated_key,syntax,not_object,trailing_data}
2. each field in declaration order: missing_field:<f>, then bad_type:<f> (the wrong JSON type)
3. each field in declaration order: bad_value:<f> (the right type, outside the field's domain)
4. a key the declaration lacks, when it says to quarantine them: unknown_field:<key>
5. the reference data, where the source declares it (x-catalogue; classify): bad_value:<campaign
   field>, bad_value:<ad field>

The fields, their types and domains are the source's declaration (eo/core/sources/*.schema.json),
which the UDF is given as text: nothing here or in the JVM lists them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from eo.core.domains import Domains
from eo.core.sources import UNKNOWN_FIELDS, Source
from eo.core.tables import INGEST_BATCH, QUARANTINE, READ_ID, SILVER, SOURCE, SOURCE_KEY

Catalogue = Mapping[str, Sequence[str]]  # each campaign id with the ids of its ads


def reader_function(source: Source = SOURCE) -> str:
    """The UDF's name in a session: the source and its declaration's digest, so that a session that
    meets an edited declaration registers it anew rather than reading with the old one."""
    return f"eo_read_{source.name}_{hashlib.sha256(source.text.encode()).hexdigest()[:12]}"


def first_reason(*checks: tuple[Column, str]) -> Column:
    """The reason of the first failing check, or null when all pass."""
    expr: Column = F.lit(None).cast("string")
    for failed, reason in reversed(checks):
        expr = F.when(failed, F.lit(reason)).otherwise(expr)
    return expr


def register_reader(spark: SparkSession, source: Source = SOURCE) -> None:
    """Make the source's reading UDF known to `spark` (once per session: a stream's batches run in a
    clone). The JVM is given the declaration's text: the function carries it to the executors."""
    name = reader_function(source)
    if not spark.catalog.functionExists(name):
        jvm = spark._jvm
        reading = jvm.io.effectivelyonce.reader.ReadEvent(source.text)
        returns = jvm.org.apache.spark.sql.types.DataType.fromDDL(source.reading_ddl)
        spark._jsparkSession.udf().register(name, reading, returns)


def read_event(value: Column, kafka_timestamp: Column, domains: Domains, source: Source = SOURCE) -> Column:
    """The reading of one record: a READING struct. The bounds go as literals, in the UDF's units."""
    floor = F.unix_micros(F.to_timestamp(F.lit(domains.event_time_floor)))
    return F.call_function(
        reader_function(source),
        value,
        F.unix_micros(kafka_timestamp),
        floor,
        F.lit(int(domains.max_future_skew_minutes)).cast("int"),
        F.lit(int(domains.max_record_bytes)).cast("int"),
    )


def parse_events(raw: DataFrame, domains: Domains | None = None, source: Source = SOURCE) -> DataFrame:
    """Bronze rows -> source coordinates, the raw bytes, the declared fields typed, `reason` (null if
    valid) and `unknown_fields`; `domains`: the bounds, Domains()'s defaults when not given."""
    domains = domains or Domains()
    register_reader(raw.sparkSession, source)
    # The ingest batch goes along, for the first-copy rule (eo/core/transforms/dedup.py); Kafka's
    # records have none yet: the stream assigns it when it commits them to bronze.
    ingest = F.col(INGEST_BATCH) if INGEST_BATCH in raw.columns else F.lit(None).cast("bigint")
    read = raw.select(
        *SOURCE_KEY,
        ingest.alias(INGEST_BATCH),
        "kafka_timestamp",
        F.make_valid_utf8(F.col("key")).alias("key"),
        "value",
        read_event(F.col("value"), F.col("kafka_timestamp"), domains, source).alias("_read"),
    )
    return read.select(
        *SOURCE_KEY,
        INGEST_BATCH,
        "kafka_timestamp",
        "key",
        "value",
        *(F.col(f"_read.{name}").alias(name) for name in (*source.field_names, "reason", UNKNOWN_FIELDS)),
    )


def raw_text(value: Column) -> Column:
    """A record's bytes as text, invalid UTF-8 replaced: what quarantine shows a person."""
    text = value.cast("string")
    return F.when(F.is_valid_utf8(value), text).otherwise(F.make_valid_utf8(text))


def sql_string(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def catalogue_map(catalogue: Catalogue) -> Column:
    """The catalogue as a literal map: campaign id -> array of its ad ids. Written as one SQL
    expression (a thousand `F.lit` calls cost a second of a stream's start)."""
    entries = ", ".join(
        f"{sql_string(campaign)}, array({', '.join(sql_string(ad) for ad in ads)})"
        for campaign, ads in sorted(catalogue.items())
    )
    return F.expr(f"map({entries})").cast("map<string,array<string>>")


def classify(parsed: DataFrame, catalogue: Catalogue, source: Source = SOURCE) -> DataFrame:
    """Add the reference checks the source declares (x-catalogue): the campaign must exist, and the
    ad must belong to it. The reading's event id goes along as READ_ID too (quarantine's column)."""
    classified = parsed
    if source.catalogue is not None:
        campaign, ad = source.catalogue
        ads = F.try_element_at(catalogue_map(catalogue), F.col(campaign))  # null: no such campaign
        reference = first_reason(
            (ads.isNull(), f"bad_value:{campaign}"),
            (~F.coalesce(F.array_contains(ads, F.col(ad)), F.lit(False)), f"bad_value:{ad}"),
        )
        classified = parsed.withColumn("reason", F.coalesce("reason", reference))
    # Only a refused record keeps its text (for quarantine): a valid one is its fields, and the
    # text of every record would double what a micro-batch shuffles and sends to Python.
    refused_text = F.when(F.col("reason").isNotNull(), raw_text(F.col("value")))
    columns = [refused_text.alias("raw_value") if c == "value" else F.col(c) for c in classified.columns]
    if READ_ID not in classified.columns:
        columns.append(F.col(source.event_id).alias(READ_ID))
    return classified.select(*columns)


def quarantine_rows(classified: DataFrame) -> DataFrame:
    return classified.where(F.col("reason").isNotNull()).select(*QUARANTINE.columns)


def valid_events(classified: DataFrame) -> DataFrame:
    """Valid rows in silver's shape, still with every duplicate copy and with the ingest batch
    that decides which copy is first (eo/core/transforms/dedup.py first_copies drops it)."""
    return (
        classified.where(F.col("reason").isNull())
        .withColumn("event_date", F.to_date(SOURCE.event_time))
        .select(*SILVER.columns, INGEST_BATCH)
    )
