"""The adversarial corpus (tests/corpus/hostile.jsonl): every hostile record gets exactly the
outcome docs/bad-input.md gives it, all of them classified in one DataFrame."""

import datetime as dt
import json
import os
import sys
from collections import Counter

import pytest

from eo.core.reference import ad_ids, ad_rows, campaign_ids
from eo.core.sources import CLICKS
from eo.core.tables import RECORD_DDL
from eo.core.transforms.parse import Domains, classify, parse_events
from tests.corpus import POISON_MARKER, VALID, load_corpus
from tests.helpers import PRODUCED_AT

FIELDS, REQUIRED_FIELDS = CLICKS.field_names, CLICKS.required

pytestmark = pytest.mark.unit

CASES = load_corpus()
POISON = "poison"
REQUIRED_CLASSES = {
    "raw_bytes",
    "invalid_utf8",
    "nul",
    "bom",
    "deep_nesting",
    "large",
    "empty",
    "not_object",
    "repeated_key",
    "extra_fields",
    "wrong_type",
    "missing_field",
    "syntax",
    "trailing_data",
    "event_time",
    "price",
    "id",
    "event_type",
    "reference",
    "precedence",
    "unicode_escape",
    "valid",
    POISON,
}
# Every reason the rules can give (docs/bad-input.md), and the outcome of a poison record.
REASONS = {
    *(
        f"malformed_json:{r}"
        for r in ("empty", "too_large", "invalid_utf8", "repeated_key", "syntax", "not_object", "trailing_data")
    ),
    *(f"missing_field:{f}" for f in FIELDS),
    *(f"bad_type:{f}" for f in FIELDS),
    *(f"bad_value:{f}" for f in FIELDS),
}
POISON_REASON = "poison:USER_RAISED_EXCEPTION"
# Valid events are published for real too (Kafka timestamp: now), so they sit in a past window;
# these few are the domain's own valid edges, which no date in the window can show.
WINDOW = (dt.datetime(2026, 11, 1, tzinfo=dt.UTC), dt.datetime(2026, 11, 21, tzinfo=dt.UTC))
OUT_OF_WINDOW = {"time-floor-exact", "time-floor-exact-offset", "time-feb29-leap"}


def loads(value: bytes):
    """json.loads, deep enough for the corpus's 1000-level valid record."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 5000))
    try:
        return json.loads(value)
    finally:
        sys.setrecursionlimit(limit)


def outcome(case) -> str:
    """What the reading alone gives: poison records are valid events until the fault lab arms them."""
    return VALID if case.cls == POISON else case.expect


def test_every_record_gets_the_outcome_the_rules_give(spark):
    cases = [c for c in CASES if not (c.cls == POISON and os.environ.get("EO_FAULT_POISON"))]
    rows = [(c.name, c.value, "corpus", 0, offset, PRODUCED_AT) for offset, c in enumerate(cases)]
    catalogue = {campaign: ad_ids(campaign) for campaign in campaign_ids()}
    raw = spark.createDataFrame(rows, RECORD_DDL)
    got = {
        r.kafka_offset: r.reason or VALID
        for r in classify(parse_events(raw, Domains()), catalogue).select("kafka_offset", "reason").collect()
    }
    assert len(got) == len(cases)
    wrong = [
        f"{c.name}: expected {outcome(c)}, got {got[offset]}"
        for offset, c in enumerate(cases)
        if got[offset] != outcome(c)
    ]
    assert not wrong, f"{len(wrong)} of {len(cases)} cases:\n" + "\n".join(wrong)


def test_the_corpus_covers_every_class_and_reason():
    names = [c.name for c in CASES]
    assert len(CASES) >= 150
    assert sorted(n for n, k in Counter(names).items() if k > 1) == []
    assert REQUIRED_CLASSES <= {c.cls for c in CASES}
    expected = {c.expect for c in CASES}
    assert expected <= {*REASONS, VALID, POISON_REASON}, expected - {*REASONS, VALID, POISON_REASON}
    assert sorted(REASONS - expected) == []
    assert {e.split(":")[0] for e in expected} == {
        "malformed_json",
        "missing_field",
        "bad_type",
        "bad_value",
        "poison",
        VALID,
    }
    assert sum(c.expect == VALID for c in CASES) >= 20


def test_poison_cases_are_otherwise_valid_and_only_they_hold_the_marker():
    marker = POISON_MARKER.encode()
    poison = [c for c in CASES if c.cls == POISON]
    assert len(poison) >= 2
    assert all(c.expect == POISON_REASON and marker in c.value for c in poison)
    assert [c.name for c in CASES if c.cls != POISON and marker in c.value] == []


def test_valid_cases_are_unique_events_of_the_reference_in_the_past():
    pairs = set(ad_rows())
    events = {c.name: loads(c.value) for c in CASES if outcome(c) == VALID}
    ids = [e["event_id"] for e in events.values()]
    assert sorted(i for i, k in Counter(ids).items() if k > 1) == []
    assert [n for n, e in events.items() if not e["event_id"].startswith("corpus-")] == []
    assert [n for n, e in events.items() if (e["ad_id"], e["campaign_id"]) not in pairs] == []
    times = {n: dt.datetime.fromisoformat(e["event_time"]) for n, e in events.items()}
    outside = {n for n, t in times.items() if not WINDOW[0] <= t < WINDOW[1]}
    assert outside == OUT_OF_WINDOW
    assert all(t < WINDOW[1] for t in times.values())


def test_cases_reaching_field_checks_carry_every_required_field_or_name_the_missing_one():
    """A hostile event breaks one rule: apart from it, it is a whole event."""
    for c in CASES:
        if not c.expect.startswith(("missing_field:", "bad_type:", "bad_value:")) or c.cls == "precedence":
            continue
        body = loads(c.value)
        missing = [f for f in REQUIRED_FIELDS if body.get(f) is None]
        if c.expect.startswith("missing_field:") and c.expect != "missing_field:price":
            assert missing[:1] == [c.expect.split(":")[1]], c.name  # the first one the rules ask for
        else:
            assert missing == [], c.name
