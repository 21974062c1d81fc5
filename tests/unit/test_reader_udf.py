"""The reader UDF (jvm/reader) at the edges the corpus leaves out, the values it returns, and how
sessions get it. Each expected outcome is the one the Variant-expression reading it replaced gave."""

import datetime as dt
import json
from decimal import Decimal

import pytest

from eo.core.sources import CLICKS
from eo.core.tables import RECORD_DDL
from eo.core.transforms.parse import parse_events, reader_function
from eo.runtime.jars import MissingJarsError, jar_paths
from tests.helpers import PRODUCED_AT, bronze_frame, event, records

EVENT_TYPES = CLICKS.by_name["event_type"].allowed

pytestmark = pytest.mark.unit

EVENT = json.dumps(event("e1", 0))
PURCHASE = json.dumps(event("e1", 0, kind="purchase", price="1.00"))


def extended(text: str, extra: str) -> str:
    """`text`, an object, with `extra` (raw JSON, `"key": value, ...`) added at its end."""
    return text[:-1] + ", " + extra + "}"


def priced(raw_price: str) -> str:
    """A purchase whose price is `raw_price` written as is (a JSON number or string)."""
    return PURCHASE.replace('"price": "1.00"', f'"price": {raw_price}')


def read(spark, payloads: list) -> list:
    return sorted(
        parse_events(bronze_frame(spark, records(payloads, partitions=1))).collect(),
        key=lambda r: r.kafka_offset,
    )


def reason_of(spark, payload) -> str | None:
    (row,) = read(spark, [payload])
    return row.reason


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        # A repeated top-level key wins over what json_object_keys tolerates, never over the rest.
        (extended(EVENT, "\"user_id\": 'u2'"), "malformed_json:repeated_key"),
        (extended(EVENT, '"user_id": "u\x01"'), "malformed_json:repeated_key"),
        (extended(EVENT, '"ctx": {"a": 1, "a": 2}, "user_id": "u2"'), "malformed_json:repeated_key"),
        (extended(EVENT, '"user_id": "u2", "tags": [1,]'), "malformed_json:syntax"),
        (extended(EVENT, '"user_id": "u2"') + " trailing", "malformed_json:repeated_key"),
        ("\ufeff" + extended(EVENT, '"user_id": "u2"'), "malformed_json:syntax"),
        ('{"a": 1, "a": 2', "malformed_json:syntax"),
        # Keys compare as Spark's strings do: both lone surrogates become "?".
        (extended(EVENT, r'"k\ud800": 1, "k\udc00": 2'), "malformed_json:repeated_key"),
        (extended(EVENT, r'"k\ud800": 1, "j\udc00": 2'), "malformed_json:syntax"),
        # Jackson's limits, as the Variant parser had them: 1000 digits, 1000 levels.
        (extended(EVENT, '"n": ' + "1" * 1000), None),
        (extended(EVENT, '"n": ' + "1" * 1001), "malformed_json:syntax"),
        (extended(EVENT, '"deep": ' + "[" * 999 + "]" * 999), None),
        (extended(EVENT, '"deep": ' + "[" * 1000 + "]" * 1000), "malformed_json:syntax"),
        # A first value that is not an object, or not a whole value.
        (r'"\ud800"', "malformed_json:syntax"),
        ('"abc', "malformed_json:syntax"),
        ("42x", "malformed_json:syntax"),
        ("[1] x", "malformed_json:not_object"),
        (" " * 70_000, "malformed_json:empty"),
    ],
)
def test_record_rules_at_their_edges(spark, payload, reason):
    assert reason_of(spark, payload) == reason


@pytest.mark.parametrize(
    ("raw_price", "reason", "price"),
    [
        ("0.0000000", None, Decimal("0.00")),
        ("-0", None, Decimal("0.00")),
        ('"-0"', None, Decimal("0.00")),
        ('"0000000012.50"', None, Decimal("12.50")),
        ('"12.500"', None, Decimal("12.50")),
        ("99999999.990", None, Decimal("99999999.99")),
        ("99999999.999", "bad_value:price", None),
        ("100000000.0", "bad_value:price", None),
        ("12345678901234567890", "bad_value:price", None),
        ("1" * 39, "bad_type:price", None),
        ("1e2", "bad_type:price", None),
        ('"1e2"', "bad_value:price", None),
        ('"+1"', "bad_value:price", None),
        ('"1."', "bad_value:price", None),
        ('".5"', "bad_value:price", None),
        ('"-0.01"', "bad_value:price", Decimal("-0.01")),  # in DECIMAL(10,2), but negative
    ],
)
def test_prices_are_read_by_value(spark, raw_price, reason, price):
    (row,) = read(spark, [priced(raw_price)])
    assert (row.reason, row.price) == (reason, price)


def test_a_readable_object_keeps_its_fields_whatever_the_reason(spark):
    trailing, late = read(spark, [EVENT + " x", json.dumps(event("e2", 0, kind="purchase", price="2.50", user_id=1))])
    assert trailing.reason == "malformed_json:trailing_data"
    assert (trailing.event_id, trailing.user_id, trailing.ad_id) == ("e1", "u1", "a001-1")
    assert trailing.event_time == dt.datetime(2026, 11, 5)
    assert late.reason == "bad_type:user_id" and late.user_id is None and late.price == Decimal("2.50")


def test_no_value_and_no_kafka_timestamp(spark):
    rows = [("k", None, "t", 0, 0, PRODUCED_AT), ("k", EVENT.encode(), "t", 0, 1, None)]
    tombstone, untimed = sorted(
        parse_events(spark.createDataFrame(rows, RECORD_DDL)).collect(), key=lambda r: r.kafka_offset
    )
    assert tombstone.reason == "malformed_json:empty" and tombstone.value is None
    assert untimed.reason == "bad_value:event_time" and untimed.event_time is None


def test_every_event_type_of_the_platform_is_one_the_reader_knows(spark):
    rows = read(
        spark,
        [
            json.dumps(event(f"e{i}", 0, kind=kind, price="1.00" if kind == "purchase" else None))
            for i, kind in enumerate(EVENT_TYPES)
        ],
    )
    assert [r.reason for r in rows] == [None] * len(EVENT_TYPES)


def test_the_reading_has_the_typed_columns(spark):
    types = dict(parse_events(bronze_frame(spark, records([EVENT]))).dtypes)
    assert (types["event_time"], types["price"], types["reason"]) == ("timestamp", "decimal(10,2)", "string")


def test_every_session_registers_the_function_once(spark):
    other = spark.newSession()  # a stream's batches run in a session of their own, functions too
    assert not other.catalog.functionExists(reader_function())
    first = parse_events(bronze_frame(other, records([EVENT])))
    again = parse_events(bronze_frame(other, records([EVENT])))
    assert other.catalog.functionExists(reader_function())
    assert [r.reason for r in first.unionByName(again).collect()] == [None, None]


def test_sessions_need_the_reader_jar(tmp_path):
    spark_jars, reader_jars = tmp_path / "spark", tmp_path / "reader"
    spark_jars.mkdir()
    reader_jars.mkdir()
    for name in ("delta-spark_4.2_2.13-4.4.0.jar", "spark-sql-kafka-0-10_2.13-4.2.0.jar"):
        (spark_jars / name).touch()
    with pytest.raises(MissingJarsError, match="reader jar"):
        jar_paths(jars_dir=spark_jars, reader_dir=reader_jars)
    (reader_jars / "effectively-once-reader-0.1.0.jar").touch()
    assert jar_paths(jars_dir=spark_jars, reader_dir=reader_jars)[-1].endswith("effectively-once-reader-0.1.0.jar")
