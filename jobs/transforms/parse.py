"""Raw Kafka records -> typed events, each with a quarantine reason or none.

The one strict reading of a record, shared by stream, batch and verification (docs/bad-input.md).
Every rule is a column expression evaluated in the JVM (no Python UDF), so stream and batch
classify a record identically and no record value crosses into Python to be read.

Reasons, first match wins, in this order:
1. the record: malformed_json:{empty,too_large,invalid_utf8,repeated_key,syntax,not_object,trailing_data}
2. each field in FIELDS order: missing_field:<f>, then bad_type:<f> (the wrong JSON type)
3. each field in FIELDS order: bad_value:<f> (the right type, outside the field's domain)
4. the reference data (classify): bad_value:campaign_id, bad_value:ad_id
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from jobs.tables import EVENT_TYPES, QUARANTINE, SILVER, SOURCE_KEY

ID_FIELDS = ("event_id", "user_id", "session_id", "campaign_id", "ad_id")
REQUIRED_FIELDS = ("event_id", "event_type", "event_time", "user_id", "session_id", "campaign_id", "ad_id")
FIELDS = (*REQUIRED_FIELDS, "price")

# Java regular expressions. \A and \z, never ^ and $: "$" also matches before a final newline,
# which would let "u1\n" through as an id.
ID_PATTERN = r"\A[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}\z"
# A value DECIMAL(10,2) holds exactly, nothing rounded: up to 8 integer digits (leading zeros
# aside) and 2 decimals (trailing zeros aside), so "1.500" is 1.50 and "1.234" is refused.
PRICE_PATTERN = r"\A-?0*[0-9]{1,8}(\.[0-9]{1,2}0*)?\z"
# A date and a time of day, at most microseconds (what a Spark timestamp holds), Z or an offset.
EVENT_TIME_PATTERN = (
    r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?(Z|[+-][0-9]{2}:[0-9]{2})\z"
)
# A JSON string literal, written with possessive loops: no backtracking, no recursion per char.
JSON_STRING = r'"[^"\\]*+(?:\\.[^"\\]*+)*+"'
JSON_SPACE = " \t\r\n"
# An object whose values are all scalars, with nothing after it (tested after strings are blanked).
FLAT_OBJECT = r"\A[ \t\r\n]*\{[^{}\[\]]*\}[ \t\r\n]*\z"
INTEGER_TYPES = ("TINYINT", "SMALLINT", "INT", "BIGINT")


@dataclass(frozen=True)
class Domains:
    """The bounds of the field domains; the values live in conf/platform.toml [domains]."""

    event_time_floor: str = "2000-01-01T00:00:00Z"
    max_future_skew_minutes: int = 15
    max_record_bytes: int = 65536

    @classmethod
    def from_conf(cls, values: dict) -> Domains:
        known = {k: values[k] for k in cls.__dataclass_fields__ if k in values}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ValueError(f"unknown [domains] keys {unknown}; known: {sorted(cls.__dataclass_fields__)}")
        return cls(**known)


def first_reason(*checks: tuple[Column, str]) -> Column:
    """The reason of the first failing check, or null when all pass."""
    expr: Column = F.lit(None).cast("string")
    for failed, reason in reversed(checks):
        expr = F.when(failed, F.lit(reason)).otherwise(expr)
    return expr


def _trailing_data(text: Column) -> Column:
    """True when anything but white space follows the first JSON value of `text`.

    Only asked of text whose first value is a valid object. String literals are blanked first,
    so every brace left is structural. A flat object settles it with one regex; otherwise a walk
    over the characters finds where the depth first returns to zero (rare: nested extra fields).
    """
    # The usual record: its first "}" is its last character, so the object can only end there.
    # Counted in bytes (cheap) and trimmed of spaces only: a final tab or newline takes the slow path.
    first_close_is_last = F.octet_length(F.substring_index(text, "}", 1)) + 1 == F.octet_length(F.rtrim(text))
    blanked = F.regexp_replace(text, JSON_STRING, '""')
    start = F.struct(F.lit(0).alias("depth"), F.lit(False).alias("closed"), F.lit(False).alias("trailing"))

    def step(acc: Column, c: Column) -> Column:
        closing = c.isin("}", "]")
        delta = F.when(c.isin("{", "["), 1).when(closing, -1).otherwise(0)
        return F.struct(
            (acc["depth"] + delta).alias("depth"),
            (acc["closed"] | ((acc["depth"] == 1) & closing)).alias("closed"),
            (acc["trailing"] | (acc["closed"] & ~c.isin(*JSON_SPACE))).alias("trailing"),
        )

    walk = F.aggregate(F.split(blanked, ""), start, step, lambda acc: acc["trailing"])
    return F.when(first_close_is_last, F.lit(False)).when(blanked.rlike(FLAT_OBJECT), False).otherwise(walk)


def _record_checks(value: Column, text: Column, v: Column, domains: Domains) -> list[tuple[Column, str]]:
    keys = F.json_object_keys(text)
    # Only what failed to parse can be empty or repeat a key: the dearer checks wait for that.
    return [
        (value.isNull() | (v.isNull() & (F.trim(text, F.lit(JSON_SPACE)) == "")), "malformed_json:empty"),
        (F.octet_length(value) > domains.max_record_bytes, "malformed_json:too_large"),
        (~F.is_valid_utf8(value), "malformed_json:invalid_utf8"),
        (v.isNull() & (F.size(F.array_distinct(keys)) < F.size(keys)), "malformed_json:repeated_key"),
        (v.isNull(), "malformed_json:syntax"),
        (~text.rlike(r"\A[ \t\r\n]*\{"), "malformed_json:not_object"),
        (_trailing_data(text), "malformed_json:trailing_data"),
    ]


def _is_number(kind: Column) -> Column:
    """A JSON number in plain notation: Variant reads those exactly, as integers or decimals.
    An exponent makes it a DOUBLE, which is a float, so never a price."""
    return kind.isin(*INTEGER_TYPES) | kind.startswith("DECIMAL(")


def _type_checks(kinds: dict[str, Column]) -> list[tuple[Column, str]]:
    absent = {name: kinds[name].isNull() | (kinds[name] == "VOID") for name in FIELDS}  # VOID: JSON null
    checks: list[tuple[Column, str]] = []
    for name in REQUIRED_FIELDS:
        checks += [(absent[name], f"missing_field:{name}"), (kinds[name] != "STRING", f"bad_type:{name}")]
    price_ok = (kinds["price"] == "STRING") | _is_number(kinds["price"])
    checks.append((~absent["price"] & ~price_ok, "bad_type:price"))
    return checks


def _event_time(text: Column, kafka_ts: Column, domains: Domains) -> Column:
    """The event time when it is inside its domain, else null: an out-of-range timestamp never
    leaves this function (year 0 parses in Spark but not in Python, and would poison a collect)."""
    skew = F.expr(f"INTERVAL {int(domains.max_future_skew_minutes)} MINUTES")
    floor = F.to_timestamp(F.lit(domains.event_time_floor))
    parsed = F.when(text.rlike(EVENT_TIME_PATTERN), F.try_to_timestamp(text))
    return F.when((parsed >= floor) & (parsed <= kafka_ts + skew), parsed)


def _value_checks(strings: dict[str, Column], event_time: Column) -> list[tuple[Column, str]]:
    price = strings["price"]
    purchase = strings["event_type"] == "purchase"
    checks: list[tuple[Column, str]] = [(~strings["event_id"].rlike(ID_PATTERN), "bad_value:event_id")]
    checks += [
        (~strings["event_type"].isin(*EVENT_TYPES), "bad_value:event_type"),
        (event_time.isNull(), "bad_value:event_time"),
    ]
    checks += [(~strings[name].rlike(ID_PATTERN), f"bad_value:{name}") for name in ID_FIELDS[1:]]
    checks += [
        (purchase & price.isNull(), "missing_field:price"),
        (price.isNotNull() & (~purchase | ~price.rlike(PRICE_PATTERN)), "bad_value:price"),
        (price.try_cast("decimal(10,2)") < 0, "bad_value:price"),
    ]
    return checks


def parse_events(raw: DataFrame, domains: Domains = Domains()) -> DataFrame:
    """Bronze rows -> source coordinates, raw text, typed fields and `reason` (null if valid)."""
    text = F.col("value").cast("string")
    readable = F.when(F.is_valid_utf8("value"), text).otherwise(F.make_valid_utf8(text))
    # Variant's parser is the strict one: no single quotes, NaN, leading zeros or repeated keys,
    # and numbers kept exact. Parsed once per record, in its own projection.
    parsed = raw.select(
        *SOURCE_KEY,
        "kafka_timestamp",
        F.make_valid_utf8(F.col("key")).alias("key"),
        "value",
        text.alias("_text"),
        readable.alias("raw_value"),
        F.when(
            F.is_valid_utf8("value") & (F.octet_length("value") <= domains.max_record_bytes), F.try_parse_json(text)
        ).alias("_v"),
    )
    # One lookup of every field, each still a Variant, so its JSON type can be asked.
    shape = "struct<" + ", ".join(f"{name}: variant" for name in FIELDS) + ">"
    fields = parsed.select("*", F.try_variant_get("_v", "$", shape).alias("_f"))
    kinds = {name: F.schema_of_variant(f"_f.{name}") for name in FIELDS}
    plain = {name: F.col(f"_f.{name}").cast("string") for name in FIELDS}
    strings = {name: F.when(kinds[name] == "STRING", plain[name]) for name in FIELDS}
    strings["price"] = F.when((kinds["price"] == "STRING") | _is_number(kinds["price"]), plain["price"])
    typed = fields.select(
        "*", *(strings[name].alias(f"_{name}") for name in FIELDS), *(kinds[n].alias(f"_kind_{n}") for n in FIELDS)
    )
    s = {name: F.col(f"_{name}") for name in FIELDS}
    k = {name: F.col(f"_kind_{name}") for name in FIELDS}
    event_time = _event_time(s["event_time"], F.col("kafka_timestamp"), domains)
    checks = [
        *_record_checks(F.col("value"), F.col("_text"), F.col("_v"), domains),
        *_type_checks(k),
        *_value_checks(s, event_time),
    ]
    reason = first_reason(*checks)
    return typed.select(
        *SOURCE_KEY,
        "kafka_timestamp",
        "key",
        "raw_value",
        *(s[name].alias(name) for name in ID_FIELDS),
        s["event_type"].alias("event_type"),
        event_time.alias("event_time"),
        F.when(s["price"].rlike(PRICE_PATTERN), s["price"].try_cast("decimal(10,2)")).alias("price"),
        reason.alias("reason"),
    )


def classify(parsed: DataFrame, campaigns: DataFrame, ads: DataFrame) -> DataFrame:
    """Add the reference checks: the campaign must exist, and the ad must belong to it."""
    # One small catalogue, one broadcast join: each campaign with the array of its ads.
    owned = ads.groupBy("campaign_id").agg(F.collect_set("ad_id").alias("_ads"))
    catalogue = campaigns.select("campaign_id", F.lit(True).alias("_known")).join(owned, "campaign_id", "left")
    joined = parsed.join(F.broadcast(catalogue), on="campaign_id", how="left")
    reference = first_reason(
        (F.col("_known").isNull(), "bad_value:campaign_id"),
        (~F.coalesce(F.array_contains("_ads", F.col("ad_id")), F.lit(False)), "bad_value:ad_id"),
    )
    return joined.withColumn("reason", F.coalesce("reason", reference)).drop("_known", "_ads")


def isolated(raw: DataFrame, reasons: DataFrame) -> DataFrame:
    """Records quarantined unread, with given reasons (poison), in the shape `classify` returns."""
    rows = raw.join(F.broadcast(reasons.select(*SOURCE_KEY, "reason")), on=list(SOURCE_KEY))
    text = F.col("value").cast("string")
    return rows.select(
        *SOURCE_KEY,
        "kafka_timestamp",
        F.make_valid_utf8(F.col("key")).alias("key"),
        F.make_valid_utf8(text).alias("raw_value"),
        *(F.lit(None).cast("string").alias(name) for name in (*ID_FIELDS, "event_type")),
        F.lit(None).cast("timestamp").alias("event_time"),
        F.lit(None).cast("decimal(10,2)").alias("price"),
        "reason",
    )


def quarantine_rows(classified: DataFrame) -> DataFrame:
    return classified.where(F.col("reason").isNotNull()).select(*QUARANTINE.columns)


def valid_events(classified: DataFrame) -> DataFrame:
    """Valid rows in silver's shape (still with every duplicate copy)."""
    return (
        classified.where(F.col("reason").isNull())
        .withColumn("event_date", F.to_date("event_time"))
        .select(*SILVER.columns)
    )
