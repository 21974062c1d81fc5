"""Classification of raw records: valid, or quarantined with the right reason."""

from decimal import Decimal

import pytest

from jobs.reference import campaign_rows
from jobs.tables import CAMPAIGNS
from jobs.transforms.parse import classify, parse_events, quarantine_rows, valid_events
from tests.helpers import bronze_frame, event, records

pytestmark = pytest.mark.unit


def classify_payloads(spark, payloads):
    campaigns = spark.createDataFrame(campaign_rows(), CAMPAIGNS.ddl)
    rows = classify(parse_events(bronze_frame(spark, records(payloads))), campaigns).collect()
    return {r.kafka_offset if r.event_id is None else r.event_id: r for r in rows}


def reason_of(spark, payload) -> str | None:
    (row,) = classify_payloads(spark, [payload]).values()
    return row.reason


def test_valid_event_has_no_reason_and_exact_price(spark):
    rows = classify_payloads(spark, [event("e1", 0, kind="purchase", price="12.30"), event("e2", 1, price=7)])
    assert rows["e1"].reason is None
    assert rows["e1"].price == Decimal("12.30")
    assert rows["e2"].reason is None and rows["e2"].price == Decimal("7.00")


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ('{"event_id": "e1", "event_type": ', "malformed_json"),
        ("not json at all", "malformed_json"),
        ("[1, 2, 3]", "malformed_json"),
        ("", "malformed_json"),
        ({k: v for k, v in event("e1", 0).items() if k != "user_id"}, "missing_field:user_id"),
        (event("e1", 0, event_type=None), "missing_field:event_type"),
        (event("e1", 0, user_id={"id": 1}), "bad_type:user_id"),
        (event("e1", 0, event_time=1763600000), "bad_type:event_time"),
        (event("e1", 0, event_time="yesterday"), "bad_type:event_time"),
        (event("e1", 0, price="12,50"), "bad_type:price"),
        (event("e1", 0, price="1.234"), "bad_type:price"),
        (event("e1", 0, kind="view"), "bad_value:event_type"),
        (event("e1", 0, kind="purchase"), "missing_field:price"),
        (event("e1", 0, kind="purchase", price="-5.00"), "negative_price"),
        (event("e1", 0, campaign_id="c999"), "unknown_campaign"),
    ],
)
def test_bad_records_are_quarantined_with_reason(spark, payload, reason):
    assert reason_of(spark, payload) == reason


def test_split_keeps_every_record_once(spark):
    payloads = [event("e1", 0), "garbage", event("e2", 1, campaign_id="c999"), event("e1", 0)]
    campaigns = spark.createDataFrame(campaign_rows(), CAMPAIGNS.ddl)
    classified = classify(parse_events(bronze_frame(spark, records(payloads))), campaigns)
    quarantined = quarantine_rows(classified).collect()
    valid = valid_events(classified).collect()
    assert len(quarantined) + len(valid) == len(payloads)
    assert sorted(r.reason for r in quarantined) == ["malformed_json", "unknown_campaign"]
    assert {r.raw_value for r in quarantined} >= {"garbage"}
    assert all(r.event_date is not None for r in valid)
