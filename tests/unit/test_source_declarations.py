"""A source is a declaration (eo/core/sources/*.schema.json): one file that the JVM's strict
reading and the Python side both read, with the same refusals, and that alone decides the fields,
their rules and what a key the declaration lacks becomes."""

import json

import pytest
from pyspark.errors import IllegalArgumentException

from eo.core.sources import CLICKS, DECLARED, SOURCE_VARIABLE, SourceRefused, parse, selected_name
from eo.core.tables import SILVER
from eo.core.transforms.parse import parse_events, register_reader
from tests.helpers import bronze_frame, records

pytestmark = pytest.mark.unit

# A second source's declaration, with every kind of field and rule the reading knows.
ORDERS = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "orders_test",
    "type": "object",
    "x-topic": "orders",
    "x-event-id": "order_id",
    "x-event-time": "event_time",
    "additionalProperties": False,
    "required": ["order_id", "event_time", "amount", "currency"],
    "properties": {
        "order_id": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$"},
        "event_time": {"type": "string", "format": "date-time"},
        "amount": {"type": ["string", "number"], "x-sql-type": "DECIMAL(18,2)", "minimum": 0},
        "currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "items": {"type": "integer", "minimum": 1},
        "channel": {"type": "string", "enum": ["web", "app"]},
    },
}


def declared(changes: dict | None = None, field: str | None = None, **spec) -> str:
    body = json.loads(json.dumps(ORDERS))
    body.update(changes or {})
    if field:
        body["properties"][field] = spec
    return json.dumps(body)


def test_the_clicks_declaration_gives_silvers_columns_and_key():
    assert DECLARED["clicks"] is CLICKS
    assert CLICKS.event_id == "event_id" and SILVER.key == ("event_id",)
    assert SILVER.columns[:9] == [
        "event_id", "event_type", "event_time", "event_date", "user_id", "session_id", "campaign_id", "ad_id", "price",
    ]  # fmt: skip
    assert SILVER.columns[-1] == "unknown_fields"
    assert CLICKS.required == ("event_id", "event_type", "event_time", "user_id", "session_id", "campaign_id", "ad_id")
    assert CLICKS.keeps_unknown


@pytest.mark.parametrize("text", [CLICKS.text, DECLARED["orders"].text, declared()])
def test_the_jvm_and_python_read_a_declaration_alike(spark, text):
    assert spark._jvm.io.effectivelyonce.reader.ReadEvent.readingDdl(text) == parse(text).reading_ddl


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (declared({"additionalItems": 1}), "keyword additionalItems"),
        (declared(field="amount", type="number"), "field amount has a type"),
        (declared(field="note", type="string", maxLength=3), "field note has keyword maxLength"),
        (declared({"required": ["order_id", "event_time", "nope"]}), "required field nope"),
        (declared({"type": "array"}), '"type" must be "object"'),
        (declared(field="note", type="string", minimum=1), "field note: minimum applies to a decimal or an integer"),
        (declared(field="items", type="integer", enum=["1"]), "field items: pattern and enum apply to a string only"),
        (declared(field="note", type="string", **{"x-sql-type": "STRING"}), "field note: x-sql-type names a decimal"),
    ],
)
def test_what_the_reading_does_not_know_is_refused_by_both_sides_in_one_line(spark, text, named):
    with pytest.raises(SourceRefused, match=named) as python:
        parse(text)
    assert "\n" not in str(python.value) and "orders_test" in str(python.value)
    with pytest.raises(IllegalArgumentException, match=named):  # the JVM's, as PySpark raises it
        spark._jvm.io.effectivelyonce.reader.ReadEvent(text)


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"x-event-id": "channel"}, "x-event-id must name a required string field"),
        ({"x-event-time": "order_id"}, "x-event-time must name a required date-time field"),
        ({"title": "Orders"}, "title is 'Orders'"),
        ({"x-topic": "orders,clicks"}, "x-topic must be one Kafka topic name"),
        ({"x-catalogue": {"campaign": "currency"}}, "x-catalogue names"),
        ({"x-catalogue": {"campaign": "currency", "ad": "nope"}}, "x-catalogue names"),
    ],
)
def test_the_python_side_refuses_a_declaration_the_platform_cannot_carry(changes, named):
    with pytest.raises(SourceRefused, match=named):
        parse(declared(changes), "orders_test")


def read_orders(spark, payloads: list, text: str | None = None) -> list:
    source = parse(text or declared())
    register_reader(spark, source)
    rows = parse_events(bronze_frame(spark, records(payloads, partitions=1, key_by="order_id")), source=source)
    return sorted(rows.collect(), key=lambda r: r.kafka_offset)


ORDER = {"order_id": "o1", "event_time": "2026-11-01T10:00:00Z", "amount": "12.50", "currency": "EUR"}


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({}, None),
        ({"amount": 7}, None),
        ({"items": 3, "channel": "app"}, None),
        ({"amount": None}, "missing_field:amount"),
        ({"currency": 3}, "bad_type:currency"),
        ({"amount": "FLOAT"}, "bad_type:amount"),  # 1.5e3, a float: never exact
        ({"items": "3"}, "bad_type:items"),
        ({"amount": "-1"}, "bad_value:amount"),
        ({"amount": "1.005"}, "bad_value:amount"),
        ({"currency": "eur"}, "bad_value:currency"),  # the declared pattern, not the id domain
        ({"items": 0}, "bad_value:items"),
        ({"channel": "fax"}, "bad_value:channel"),
        ({"order_id": "o 1"}, "bad_value:order_id"),
        ({"event_time": "yesterday"}, "bad_value:event_time"),
        ({"coupon": "X"}, "unknown_field:coupon"),  # additionalProperties: false
        ({"coupon": "X", "amount": "-1"}, "bad_value:amount"),  # a field's rule is named first
    ],
)
def test_a_second_declaration_reads_its_own_fields_and_rules(spark, change, reason):
    payload = json.dumps({**ORDER, **change}).replace('"FLOAT"', "1.5e3")
    (row,) = read_orders(spark, [payload])
    assert row.reason == reason
    if reason is None:
        assert row.order_id == "o1" and row.currency == "EUR" and row.amount is not None


def test_typed_values_follow_the_declared_types(spark):
    (row,) = read_orders(spark, [{**ORDER, "amount": "12.5", "items": 2}])
    assert str(row.amount) == "12.50" and row.items == 2 and row.event_time.year == 2026
    assert row.unknown_fields is None


def test_keys_the_declaration_lacks_are_listed_sorted_and_kept_when_it_keeps_them(spark):
    keeping = declared({"additionalProperties": True})
    (row,) = read_orders(spark, [{**ORDER, "zone": 1, "coupon": {"a": [1]}}], keeping)
    assert row.reason is None and row.unknown_fields == ["coupon", "zone"]
    (row,) = read_orders(spark, [{**ORDER, "zone": 1, "coupon": "X"}])
    assert row.reason == "unknown_field:coupon" and row.unknown_fields == ["coupon", "zone"]


def test_the_environments_topic_is_the_declared_one_unless_it_names_another(monkeypatch):
    from eo.runtime.config import load_settings

    monkeypatch.delenv("EO_TOPIC", raising=False)
    assert CLICKS.topic == "clickstream"
    assert load_settings("local").topic == CLICKS.topic
    monkeypatch.setenv("EO_TOPIC", "demo-clickstream")
    assert load_settings("local").topic == "demo-clickstream"


def test_the_declared_sources_are_the_clickstream_and_orders_each_with_its_own_topic_key_and_policy():
    orders = DECLARED["orders"]
    assert sorted(DECLARED) == ["clicks", "orders"]
    assert (orders.topic, orders.event_id, orders.event_time) == ("orders", "order_id", "event_time")
    assert orders.field_names == ("order_id", "user_id", "amount", "currency", "event_time")
    assert orders.by_name["amount"].sql_type == "DECIMAL(18,2)" and not orders.keeps_unknown
    assert CLICKS.catalogue == ("campaign_id", "ad_id") and orders.catalogue is None
    assert len({s.topic for s in DECLARED.values()}) == len(DECLARED)  # one topic, one source


def test_a_process_serves_the_source_eo_source_names_and_an_unknown_one_is_refused_in_one_line(monkeypatch):
    monkeypatch.delenv(SOURCE_VARIABLE, raising=False)
    assert selected_name() == "clicks"
    monkeypatch.setenv(SOURCE_VARIABLE, "orders")
    assert selected_name() == "orders"
    monkeypatch.setenv(SOURCE_VARIABLE, "order")
    with pytest.raises(SourceRefused, match=r"^EO_SOURCE=order: no such source; declared: clicks, orders") as refused:
        selected_name()
    assert "\n" not in str(refused.value)


def test_each_gold_table_names_its_source_and_a_process_carries_its_sources_tables_only():
    from eo.core.gold import DECLARED as GOLD_DECLARED
    from eo.core.gold import EVERY
    from eo.runtime.config import source_prefix

    assert {name: t.source for name, t in EVERY.items()} == {
        "ad_hour_revenue": "clicks", "campaign_minute_metrics": "clicks", "currency_hour_revenue": "orders",
        "user_sessions": "clicks",
    }  # fmt: skip
    assert sorted(GOLD_DECLARED) == ["ad_hour_revenue", "campaign_minute_metrics", "user_sessions"]  # clicks'
    assert source_prefix("clicks") == "" and source_prefix("orders") == "/orders"
