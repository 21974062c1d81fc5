import json
from collections import Counter

import pytest

from producer.generator import QUARANTINE_KINDS, ClickstreamGenerator, Rates

pytestmark = pytest.mark.unit


def test_same_seed_same_stream():
    first = list(ClickstreamGenerator(seed=5, total_events=500).messages())
    second = list(ClickstreamGenerator(seed=5, total_events=500).messages())
    assert first == second
    assert first != list(ClickstreamGenerator(seed=6, total_events=500).messages())


def test_injects_each_fault_at_roughly_its_rate():
    rates = Rates(duplicate=0.05, late=0.05, very_late=0.02, malformed=0.04)
    kinds = Counter(m.kind for m in ClickstreamGenerator(seed=1, rates=rates, total_events=20000).messages())
    n = sum(kinds.values())
    assert 0.04 < (kinds["duplicate"] + kinds["duplicate_variant"]) / n < 0.06
    assert 0.03 < sum(kinds[k] for k in QUARANTINE_KINDS) / n < 0.05
    assert kinds["late"] and kinds["very_late"] and kinds["out_of_order"]


def test_copies_share_a_key_and_variants_differ_in_payload():
    messages = list(ClickstreamGenerator(seed=2, rates=Rates(duplicate=0.2), total_events=3000).messages())
    by_id: dict[str, list] = {}
    for m in messages:
        if m.kind in QUARANTINE_KINDS:
            continue
        by_id.setdefault(json.loads(m.value)["event_id"], []).append(m)
    copies = [ms for ms in by_id.values() if len(ms) > 1]
    assert copies
    assert all(
        len({m.key for m in ms}) == 1 and ms[0].key.decode() == json.loads(ms[0].value)["event_id"] for ms in copies
    )
    assert any(len({m.value for m in ms}) > 1 for ms in copies)


def test_prices_are_decimal_strings_and_events_carry_their_time():
    for m in ClickstreamGenerator(seed=3, total_events=2000, rates=Rates(malformed=0)).messages():
        event = json.loads(m.value)
        assert event["event_time"].endswith("Z")
        if event["event_type"] == "purchase":
            assert isinstance(event["price"], str) and "." in event["price"]


@pytest.mark.parametrize("span_hours", [48.0, 5.0, 30.0])
def test_the_days_help_names_are_the_days_the_event_times_fall_on(span_hours):
    """`producer generate --help` (and its first line) names the days; the stream keeps to them."""
    import datetime as dt
    import re

    from producer.generator import covered_days

    words = covered_days(span_hours)
    first, last, earliest = (dt.date.fromisoformat(d) for d in re.findall(r"\d{4}-\d{2}-\d{2}", words)[1:])
    rates = Rates(very_late=0.05)
    times = []
    for m in ClickstreamGenerator(seed=3, rates=rates, span_hours=span_hours, total_events=4000).messages():
        try:
            times.append(dt.datetime.fromisoformat(json.loads(m.value)["event_time"].replace("Z", "+00:00")))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue  # a broken record
    end = dt.datetime.combine(first, dt.time(0), dt.UTC) + dt.timedelta(hours=span_hours)
    assert min(t.date() for t in times) >= earliest and min(t.date() for t in times) < first  # late ones reach back
    assert first in {t.date() for t in times} and last in {t.date() for t in times}
    assert max(times) < end + dt.timedelta(hours=12)  # "a few hours past it"


def test_an_extra_field_goes_on_every_clean_event_and_changes_nothing_else():
    plain = list(ClickstreamGenerator(seed=5, total_events=300).messages())
    extra = list(ClickstreamGenerator(seed=5, total_events=300, extra_fields={"country": "FR"}).messages())
    assert [m.key for m in extra] == [m.key for m in plain]
    clean = [json.loads(m.value) for m in extra if m.kind == "event"]
    assert clean and all(event["country"] == "FR" for event in clean)
    assert [{k: v for k, v in e.items() if k != "country"} for e in clean] == [
        json.loads(m.value) for m in plain if m.kind == "event"
    ]


@pytest.mark.parametrize("text", ["country", "=FR", ""])
def test_an_extra_field_is_name_equals_value(text):
    import argparse

    from producer.__main__ import extra_field

    with pytest.raises(argparse.ArgumentTypeError, match="NAME=VALUE"):
        extra_field(text)
    assert extra_field("country=F=R") == ("country", "F=R")
