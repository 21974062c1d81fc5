"""The strict reading: each record valid, or quarantined with the rule it breaks (docs/bad-input.md).

The adversarial corpus (tests/corpus/) covers the edges; these are the rules one by one.
"""

import datetime as dt
import json
from decimal import Decimal

import pytest

from eo.core.reference import ad_ids, campaign_ids
from eo.core.tables import SOURCE_KEY
from eo.core.transforms.parse import Domains, classify, parse_events, quarantine_rows, valid_events
from eo.runtime import hooks
from lab.faults import FaultHooks
from tests.helpers import PRODUCED_AT, bronze_frame, event, records

pytestmark = pytest.mark.unit

DEFAULTS = Domains()


CATALOGUE = {campaign: ad_ids(campaign) for campaign in campaign_ids()}


def classified(spark, payloads, domains: Domains = DEFAULTS):
    return classify(parse_events(bronze_frame(spark, records(payloads)), domains), CATALOGUE)


def reason_of(spark, payload, domains: Domains = DEFAULTS) -> str | None:
    (row,) = classified(spark, [payload], domains).collect()
    return row.reason


def with_fields(**fields) -> str:
    body = event("e1", 0)
    body.update(fields)
    return json.dumps({k: v for k, v in body.items() if v is not ...})


def test_valid_events_keep_exact_prices(spark):
    rows = {
        r.event_id: r
        for r in classified(
            spark,
            [
                event("e1", 0, kind="purchase", price="12.30"),
                event("e2", 1, kind="purchase", price=7),
                event("e3", 2, kind="purchase", price=99999999.99),
                with_fields(event_id="e4", event_type="purchase", price=19.9),
            ],
        ).collect()
    }
    assert {k: (r.reason, r.price) for k, r in rows.items()} == {
        "e1": (None, Decimal("12.30")),
        "e2": (None, Decimal("7.00")),
        "e3": (None, Decimal("99999999.99")),
        "e4": (None, Decimal("19.90")),
    }


BAD = [
    ("", "malformed_json:empty"),
    ('{"event_id": "e1", "event_type": ', "malformed_json:syntax"),
    ("{'event_id': 'e1'}", "malformed_json:syntax"),
    ("[1, 2, 3]", "malformed_json:not_object"),
    (with_fields() + " trailing", "malformed_json:trailing_data"),
    (with_fields() + with_fields(event_id="e2"), "malformed_json:trailing_data"),
    (with_fields(extra={"a": [1]}) + "]", "malformed_json:trailing_data"),
    (with_fields()[:-1] + ', "event_id": "e2"}', "malformed_json:repeated_key"),
    (b"\xff\xfe{}", "malformed_json:invalid_utf8"),
    (with_fields(user_id=...), "missing_field:user_id"),
    (with_fields(event_type=None), "missing_field:event_type"),
    (with_fields(user_id=True), "bad_type:user_id"),
    (with_fields(event_id=1.5e3), "bad_type:event_id"),
    (with_fields(user_id={"id": 1}), "bad_type:user_id"),
    (with_fields(event_time=1763600000), "bad_type:event_time"),
    (with_fields(event_type="purchase", price=True), "bad_type:price"),
    (with_fields(event_type="purchase").replace("}", ', "price": 1.5e3}'), "bad_type:price"),
    (with_fields(user_id="u1\n"), "bad_value:user_id"),
    (with_fields(user_id="x" * 65), "bad_value:user_id"),
    (with_fields(event_type="view"), "bad_value:event_type"),
    (with_fields(event_time="yesterday"), "bad_value:event_time"),
    (with_fields(event_time="2026-11-05"), "bad_value:event_time"),
    (with_fields(event_time="1999-12-31T23:59:59Z"), "bad_value:event_time"),
    (with_fields(event_time="0000-01-01T00:00:00Z"), "bad_value:event_time"),
    (with_fields(event_time="9999-12-31T23:59:59-05:00"), "bad_value:event_time"),
    (with_fields(event_time="2026-11-05T00:00:00.1234567Z"), "bad_value:event_time"),
    (with_fields(event_type="purchase"), "missing_field:price"),
    (with_fields(event_type="purchase", price="12,50"), "bad_value:price"),
    (with_fields(event_type="purchase", price="1.234"), "bad_value:price"),
    (with_fields(event_type="purchase", price="-5.00"), "bad_value:price"),
    (with_fields(price="1.00"), "bad_value:price"),
    (with_fields(campaign_id="c999"), "bad_value:campaign_id"),
    (with_fields(ad_id="a002-1"), "bad_value:ad_id"),
]


@pytest.fixture(scope="module")
def reasons(spark) -> list[str | None]:
    """Each bad payload's reason, all read in one job: one partition, so the nth record is offset n
    (a record's outcome does not depend on its batch: test_reading_properties.py)."""
    rows = classify(parse_events(bronze_frame(spark, records([p for p, _ in BAD], partitions=1)), DEFAULTS), CATALOGUE)
    by_offset = {row.kafka_offset: row.reason for row in rows.collect()}
    return [by_offset[n] for n in range(len(BAD))]


@pytest.mark.parametrize(("case", "reason"), [(n, reason) for n, (_, reason) in enumerate(BAD)])
def test_bad_records_are_quarantined_with_the_rule_they_break(reasons, case, reason):
    assert reasons[case] == reason, BAD[case][0]


def test_extra_fields_are_allowed_and_json_null_price_is_absent(spark):
    assert reason_of(spark, with_fields(retry=True, context={"page": [1, {"x": None}]})) is None
    assert reason_of(spark, with_fields(price=None)) is None


def test_event_time_ceiling_follows_the_kafka_timestamp(spark):
    ahead = (PRODUCED_AT + dt.timedelta(minutes=14)).strftime("%Y-%m-%dT%H:%M:%SZ")
    too_far = (PRODUCED_AT + dt.timedelta(minutes=16)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert reason_of(spark, with_fields(event_time=ahead)) is None
    assert reason_of(spark, with_fields(event_time=too_far)) == "bad_value:event_time"
    assert reason_of(spark, with_fields(event_time=too_far), Domains(max_future_skew_minutes=30)) is None


def test_offsets_are_normalised_to_utc(spark):
    (row,) = classified(spark, [with_fields(event_time="2026-11-05T01:30:00+01:30")]).collect()
    assert row.reason is None and row.event_time == dt.datetime(2026, 11, 5, 0, 0)


def test_split_keeps_every_record_once(spark):
    payloads = [event("e1", 0), "garbage", event("e2", 1, campaign_id="c999"), event("e1", 0)]
    rows = classified(spark, payloads)
    quarantined = quarantine_rows(rows).collect()
    valid = valid_events(rows).collect()
    assert len(quarantined) + len(valid) == len(payloads)
    assert sorted(r.reason for r in quarantined) == ["bad_value:campaign_id", "malformed_json:syntax"]
    assert {r.raw_value for r in quarantined} >= {"garbage"}
    assert all(r.event_date is not None for r in valid)


def test_poison_records_are_quarantined_unread_with_their_recorded_reason(spark, lake, monkeypatch):
    """The reading skips a record recorded as poison (it would fail again) and quarantines it with
    the reason, key and raw value recorded: the stream's restart and the batch rebuild alike."""
    from eo.runtime.reading import classify_records
    from tests.helpers import prepare_lake

    prepare_lake(spark, lake)
    monkeypatch.setattr(hooks, "_installed", FaultHooks(poison="__boom__"))  # reading this record fails its task
    raw = bronze_frame(spark, records([b"__boom__ poison", event("e1", 0)]))
    first = raw.orderBy(*SOURCE_KEY).first()
    reason = "poison:USER_RAISED_EXCEPTION"
    poison = [(first.kafka_topic, first.kafka_partition, first.kafka_offset, reason, "k", "raw")]
    at = (first.kafka_partition, first.kafka_offset)
    rows = {(r.kafka_partition, r.kafka_offset): r for r in classify_records(spark, lake, raw, poison).collect()}
    bad, good = rows[at], next(r for coordinates, r in rows.items() if coordinates != at)
    assert (bad.reason, bad.key, bad.raw_value, bad.event_id) == ("poison:USER_RAISED_EXCEPTION", "k", "raw", None)
    assert good.reason is None and good.event_id == "e1"


def test_the_catalogue_is_a_literal_of_the_plan_whatever_its_ids(spark):
    from pyspark.sql import functions as F

    from eo.core.transforms.parse import catalogue_map

    catalogue = {"c'1": ["a\\'b", "z"], "none": []}
    rows = spark.createDataFrame([("c'1",), ("none",), ("c999",), (None,)], "campaign_id string")
    got = rows.select(F.try_element_at(catalogue_map(catalogue), F.col("campaign_id")).alias("ads")).collect()
    assert [r.ads for r in got] == [["a\\'b", "z"], [], None, None]
