"""Raw Kafka records -> typed events, each with a quarantine reason or none.

Every check is a pure column expression, so stream and batch classify a record identically.
Reasons, first match wins: malformed_json, missing_field:<f>, bad_type:<f>, bad_value:event_type,
negative_price, unknown_campaign.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from jobs.tables import EVENT_TYPES, QUARANTINE, SILVER, SOURCE_KEY

ID_FIELDS = ("event_id", "user_id", "session_id", "campaign_id", "ad_id")
REQUIRED_FIELDS = ("event_id", "event_type", "event_time", "user_id", "session_id", "campaign_id", "ad_id")
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$"
# Up to 8 integer digits and 2 decimals: exactly what DECIMAL(10,2) holds, nothing rounded.
PRICE_PATTERN = r"^-?[0-9]{1,8}(\.[0-9]{1,2})?$"
CORRUPT = "_corrupt_record"

# Every field is read as text first: the JSON reader then never drops a value silently, and the
# checks below decide what is ill-typed.
RAW_SCHEMA = StructType(
    [StructField(name, StringType()) for name in (*REQUIRED_FIELDS, "price")] + [StructField(CORRUPT, StringType())]
)


def _first_reason(*checks: tuple[Column, str]) -> Column:
    """The reason of the first failing check, or null when all pass."""
    expr = None
    for failed, reason in reversed(checks):
        expr = F.when(failed, F.lit(reason)).otherwise(expr if expr is not None else F.lit(None))
    return expr


def parse_events(raw: DataFrame) -> DataFrame:
    """Bronze rows -> source coordinates, raw text, typed fields and `reason` (null if valid)."""
    text = F.col("value").cast("string")
    parsed = raw.select(
        *SOURCE_KEY,
        "kafka_timestamp",
        "key",
        text.alias("raw_value"),
        F.from_json(text, RAW_SCHEMA, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT}).alias("j"),
    )
    j = {name: F.col(f"j.{name}") for name in (*REQUIRED_FIELDS, "price", CORRUPT)}
    event_time = F.expr("try_cast(j.event_time AS TIMESTAMP)")
    price_ok = j["price"].rlike(PRICE_PATTERN)
    price = F.when(price_ok, j["price"].cast("decimal(10,2)"))

    checks: list[tuple[Column, str]] = [
        (F.col("raw_value").isNull() | F.col("j").isNull() | j[CORRUPT].isNotNull(), "malformed_json"),
    ]
    checks += [(j[name].isNull(), f"missing_field:{name}") for name in REQUIRED_FIELDS]
    checks += [(~j[name].rlike(ID_PATTERN), f"bad_type:{name}") for name in ID_FIELDS]
    checks += [
        (event_time.isNull(), "bad_type:event_time"),
        (j["price"].isNotNull() & ~price_ok, "bad_type:price"),
        (~j["event_type"].isin(*EVENT_TYPES), "bad_value:event_type"),
        ((j["event_type"] == "purchase") & j["price"].isNull(), "missing_field:price"),
        (price < 0, "negative_price"),
    ]
    return parsed.select(
        *SOURCE_KEY,
        "kafka_timestamp",
        "key",
        "raw_value",
        *(j[name].alias(name) for name in ID_FIELDS),
        j["event_type"].alias("event_type"),
        event_time.alias("event_time"),
        price.alias("price"),
        _first_reason(*checks).alias("reason"),
    )


def classify(parsed: DataFrame, campaigns: DataFrame) -> DataFrame:
    """Add the reference check: a campaign id the campaigns table does not know is quarantined."""
    known = campaigns.select("campaign_id", F.lit(True).alias("_known"))
    joined = parsed.join(F.broadcast(known), on="campaign_id", how="left")
    reason = F.coalesce(F.col("reason"), F.when(F.col("_known").isNull(), F.lit("unknown_campaign")))
    return joined.withColumn("reason", reason).drop("_known")


def quarantine_rows(classified: DataFrame) -> DataFrame:
    return classified.where(F.col("reason").isNotNull()).select(*QUARANTINE.columns)


def valid_events(classified: DataFrame) -> DataFrame:
    """Valid rows in silver's shape (still with every duplicate copy)."""
    return (
        classified.where(F.col("reason").isNull())
        .withColumn("event_date", F.to_date("event_time"))
        .select(*SILVER.columns)
    )
