"""The orders generator (producer/orders.py) against the orders declaration's rules, and how
`python -m producer` picks a source's generator, keys a replay and names an ack log."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import Counter, defaultdict
from decimal import Decimal, InvalidOperation

import pytest

from eo.core.sources import CLICKS, DECLARED
from producer.generator import ClickstreamGenerator, Rates
from producer.orders import (
    ACCEPTED_KINDS,
    CURRENCIES,
    KINDS,
    MALFORMED_KINDS,
    QUARANTINE_KINDS,
    REQUIRED,
    OrdersGenerator,
    covered_days,
    shared_event_ids,
)

pytestmark = pytest.mark.unit

ORDERS = DECLARED["orders"]
DECLARATION = json.loads(ORDERS.text)
# Every kind shows up in a few thousand messages at these rates.
LOUD = Rates(duplicate=0.05, late=0.05, very_late=0.02, malformed=0.06)
DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:\d{2})")
DECIMAL_TEXT = re.compile(r"-?\d+(\.\d+)?")


def _has_type(value, json_type: str) -> bool:
    if json_type == "string":
        return isinstance(value, str)
    if json_type == "number":
        return isinstance(value, int | Decimal) and not isinstance(value, bool)
    raise AssertionError(f"the declaration has a type this test does not know: {json_type}")


def broken_rules(value: bytes) -> set[str]:
    """The declaration's rules the record breaks, as `rule:field` (none: it is valid)."""
    try:
        record = json.loads(value, parse_float=Decimal)
    except ValueError:
        return {"json"}
    if not isinstance(record, dict):
        return {"json"}
    broken = {f"required:{name}" for name in DECLARATION["required"] if record.get(name) is None}
    for name, found in record.items():
        spec = DECLARATION["properties"].get(name)
        if spec is None:
            if DECLARATION["additionalProperties"] is False:
                broken.add(f"additionalProperties:{name}")
            continue
        if found is None:
            continue
        types = spec["type"] if isinstance(spec["type"], list) else [spec["type"]]
        if not any(_has_type(found, t) for t in types):
            broken.add(f"type:{name}")
            continue
        if "pattern" in spec and not re.search(spec["pattern"], found):
            broken.add(f"pattern:{name}")
        if "enum" in spec and found not in spec["enum"]:
            broken.add(f"enum:{name}")
        if spec.get("format") == "date-time":
            try:
                ok = bool(DATE_TIME.fullmatch(found)) and dt.datetime.fromisoformat(found.replace("Z", "+00:00"))
            except ValueError:
                ok = False
            if not ok:
                broken.add(f"format:{name}")
        if "x-sql-type" in spec:  # DECIMAL(18,2): plain notation, at most 16 integer digits and 2 decimals
            text = str(found)
            whole, _, decimals = text.lstrip("-").partition(".")
            exact = DECIMAL_TEXT.fullmatch(text) and len(whole.lstrip("0")) <= 16 and len(decimals.rstrip("0")) <= 2
            if not exact:
                broken.add(f"x-sql-type:{name}")
                continue
        if "minimum" in spec:
            try:
                if Decimal(str(found)) < Decimal(str(spec["minimum"])):
                    broken.add(f"minimum:{name}")
            except InvalidOperation:
                broken.add(f"minimum:{name}")
    return broken


# What each broken kind breaks: exactly one rule of this family.
BREAKS = {
    "malformed_json": "json",
    "missing_field": "required",
    "bad_type": "type",
    "negative_amount": "minimum",
    "unknown_currency": "enum",
    "unknown_field": "additionalProperties",
}


@pytest.fixture(scope="module")
def loud():
    return list(OrdersGenerator(seed=11, rates=LOUD, total_events=6000).messages())


def test_the_generator_names_what_the_declaration_declares():
    assert set(CURRENCIES) == set(DECLARATION["properties"]["currency"]["enum"])
    assert set(REQUIRED) == set(DECLARATION["required"]) == set(ORDERS.field_names)
    assert ORDERS.event_id == "order_id" and not ORDERS.keeps_unknown
    assert set(BREAKS) == set(MALFORMED_KINDS) == QUARANTINE_KINDS
    assert set(KINDS) == set(ACCEPTED_KINDS) | QUARANTINE_KINDS and len(KINDS) == len(set(KINDS))


def test_same_seed_same_stream():
    first = list(OrdersGenerator(seed=5, total_events=500).messages())
    assert first == list(OrdersGenerator(seed=5, total_events=500).messages())
    assert first != list(OrdersGenerator(seed=6, total_events=500).messages())


def test_every_kind_is_sent_and_each_fault_at_roughly_its_rate(loud):
    kinds = Counter(m.kind for m in loud)
    assert set(kinds) == set(KINDS)
    n = sum(kinds.values())
    assert 0.04 < (kinds["duplicate"] + kinds["duplicate_variant"]) / n < 0.06
    assert 0.045 < sum(kinds[k] for k in QUARANTINE_KINDS) / n < 0.075


def test_accepted_kinds_are_valid_orders_and_each_broken_kind_breaks_exactly_its_rule(loud):
    for m in loud:
        broken = broken_rules(m.value)
        if m.kind in ACCEPTED_KINDS:
            assert broken == set(), (m.kind, m.value)
        else:
            assert len(broken) == 1 and next(iter(broken)).split(":")[0] == BREAKS[m.kind], (m.kind, m.value, broken)
    unknown = [json.loads(m.value) for m in loud if m.kind == "unknown_field"]
    assert all(len(set(order) - set(ORDERS.field_names)) == 1 for order in unknown)  # unknown_field:<that key>


def test_amounts_are_decimals_in_a_few_forms():
    messages = OrdersGenerator(seed=3, total_events=4000).messages()
    orders = [json.loads(m.value, parse_float=Decimal) for m in messages if m.kind in ACCEPTED_KINDS]
    amounts = [o["amount"] for o in orders]
    assert any(isinstance(a, str) and "." in a for a in amounts)  # "12.50"
    assert any(isinstance(a, Decimal) for a in amounts)  # 12.5
    assert any(str(a) == "0.00" for a in amounts)  # the minimum itself
    yen = [o["amount"] for o in orders if o.get("currency") == "JPY"]
    assert yen and all("." not in str(a) for a in yen)  # whole yen


def test_copies_share_their_order_id_as_key_and_variants_differ(loud):
    by_id: dict[str, list] = defaultdict(list)
    for m in loud:
        if m.kind in ACCEPTED_KINDS:
            by_id[json.loads(m.value)["order_id"]].append(m)
    assert all(ms[0].key.decode() == order_id for order_id, ms in by_id.items())
    copies = [ms for ms in by_id.values() if len(ms) > 1]
    assert copies and all(len({m.key for m in ms}) == 1 for ms in copies)
    assert all(ms[0].kind not in ("duplicate", "duplicate_variant") for ms in copies)  # the original comes first
    for ms in copies:
        first = json.loads(ms[0].value)
        for m in ms[1:]:
            copy = json.loads(m.value)
            changed = {k for k in first if first[k] != copy[k]}
            if m.kind == "duplicate":
                assert m.value == ms[0].value
            elif m.kind == "duplicate_variant":
                assert set(copy) == set(first) and changed in ({"event_time"}, {"amount"})


def test_late_kinds_reach_back_and_the_days_are_the_words():
    times: dict[str, list[dt.datetime]] = defaultdict(list)
    for m in OrdersGenerator(seed=4, rates=Rates(very_late=0.03, late=0.05), total_events=3000).messages():
        if m.kind in ACCEPTED_KINDS:
            at = json.loads(m.value)["event_time"]
            times[m.kind].append(dt.datetime.fromisoformat(at.replace("Z", "+00:00")))
    start = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)
    assert all(
        start - dt.timedelta(days=3) <= t < start - dt.timedelta(days=1) + dt.timedelta(hours=48)
        for t in times["very_late"]
    )
    assert min(times["very_late"]) < start <= min(times["event"])
    assert max(t for ts in times.values() for t in ts) < start + dt.timedelta(hours=48, minutes=11)
    assert "2026-11-20 to 2026-11-21" in covered_days(48.0) and "2026-11-17" in covered_days(48.0)


def test_a_few_order_ids_equal_clickstream_event_ids_of_the_same_options_and_no_other_does():
    rates, n = Rates(duplicate=0.05, malformed=0.05), 4000
    orders = list(OrdersGenerator(seed=9, rates=rates, total_events=n).messages())
    clicks = {m.key.decode() for m in ClickstreamGenerator(seed=9, rates=rates, total_events=n).messages()}
    shared = [m for m in orders if m.kind == "shared_id"]
    assert len(shared) == 20 and len({m.key for m in shared}) == 20
    assert [m.key.decode() for m in shared] == shared_event_ids(20, 9, rates, total_events=n)
    assert all(m.key.decode() in clicks and broken_rules(m.value) == set() for m in shared)
    spread = [i for i, m in enumerate(orders) if m.kind == "shared_id"]
    assert spread[0] < n // 10 and spread[-1] > n * 9 // 10  # over the whole stream
    own = {m.key.decode() for m in orders if m.kind != "shared_id"} - {m.key.decode() for m in shared}
    assert not own & clicks  # no order id equals an event id by accident
    assert not [m for m in OrdersGenerator(seed=9, total_events=n, shared_ids=0).messages() if m.kind == "shared_id"]
    assert len([m for m in OrdersGenerator(seed=9, total_events=100).messages() if m.kind == "shared_id"]) == 5


def test_an_extra_field_goes_on_every_clean_order():
    extra = OrdersGenerator(seed=5, total_events=300, extra_fields={"country": "FR"}).messages()
    clean = [json.loads(m.value) for m in extra if m.kind == "event"]
    assert clean and all(order["country"] == "FR" for order in clean)


def test_the_served_source_chooses_the_generator():
    from producer.sources import NoGenerator, generator_for

    assert generator_for("clicks").make is ClickstreamGenerator
    assert generator_for("orders").make is OrdersGenerator
    assert "event times" in generator_for("clicks").covered_days(48.0)
    assert "order times" in generator_for("orders").covered_days(48.0)
    with pytest.raises(NoGenerator) as refused:
        generator_for("payments")
    line = str(refused.value)
    assert "\n" not in line and line.startswith("EO_SOURCE=payments:") and "clicks, orders" in line


def test_a_generator_is_made_with_the_same_arguments_for_either_source():
    from producer.sources import GENERATORS

    for made in GENERATORS.values():
        stream = made.make(3, Rates(), span_hours=2.0, total_events=50, extra_fields={}).messages()
        assert len(list(stream)) == 50


def test_a_replay_is_keyed_by_the_sources_event_id(tmp_path):
    from producer.__main__ import replay_messages

    lines = ['{"order_id":"o1","amount":"1.00"}', '{"event_id":"e1"}', "not json", ""]
    path = tmp_path / "orders.jsonl"
    path.write_text("\n".join(lines) + "\n")
    keys = [m.key for m in replay_messages(path, "order_id")]
    assert keys[0] == b"o1" and len(keys) == 3 and keys[1] != b"e1"
    assert [m.key for m in replay_messages(path, "event_id")][1] == b"e1"


def test_another_sources_topic_is_refused():
    from eo.runtime.config import load_settings
    from producer.__main__ import other_source_topic

    settings = load_settings("local")
    assert other_source_topic(settings.with_overrides(topic=CLICKS.topic), "orders") == "clicks"
    assert other_source_topic(settings.with_overrides(topic=ORDERS.topic), "clicks") == "orders"
    assert other_source_topic(settings.with_overrides(topic=ORDERS.topic), "orders") is None
    assert other_source_topic(settings.with_overrides(topic="a-test-topic"), "orders") is None


def test_the_ack_log_is_per_topic_and_the_clickstreams_is_as_it_was(tmp_path):
    from eo.runtime.config import load_settings
    from producer.summary import default_ack_log

    settings = load_settings("local").with_overrides(acks_root=str(tmp_path / "acks"), topic=ORDERS.topic)
    clicks = default_ack_log(settings.with_overrides(topic=CLICKS.topic), "seed7", source="clicks")
    orders = default_ack_log(settings, "seed7", source="orders")
    assert clicks.parent == orders.parent == tmp_path / "acks"
    assert re.fullmatch(r"\d{8}T\d{12}Z-seed7\.csv", clicks.name)
    assert re.fullmatch(rf"\d{{8}}T\d{{12}}Z-{ORDERS.topic}-seed7\.csv", orders.name)
