"""Property tests of the shared strict reading (docs/bad-input.md), on records Hypothesis makes up:
- nothing raises, and every record gets exactly one outcome from the documented vocabulary;
- a valid record's typed values are inside their domains;
- a record's outcome does not depend on the micro-batch it lands in (stream cuts vs one batch);
- stream (RefineBatch), batch rebuild and verification's loss check agree on every record.
"""

import datetime as dt
import json
import re
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batch.rebuild import classify_log, rebuild
from eo.core.quality.reconcile import account_for_acks
from eo.core.reference import ad_ids, campaign_ids
from eo.core.sources import CLICKS, ID_PATTERN
from eo.core.tables import QUARANTINE, SILVER, SOURCE_KEY
from eo.runtime import lake
from eo.runtime.reading import classify_records
from tests.conftest import lake_settings
from tests.helpers import PRODUCED_AT, bronze_frame, prepare_lake, records, sorted_rows, stream

FIELDS = CLICKS.field_names

EVENT_TYPES = CLICKS.by_name["event_type"].allowed

pytestmark = pytest.mark.unit

REASON = re.compile(
    r"malformed_json:(empty|too_large|invalid_utf8|repeated_key|syntax|not_object|trailing_data)"
    r"|missing_field:(%s)|bad_type:(%s)|bad_value:(%s)" % (("|".join(FIELDS),) * 3)
)
ID = re.compile(ID_PATTERN.removesuffix("$") + r"\Z")  # JSON Schema's $: the end, never before a newline

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
good_ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,20}", fullmatch=True)
zones = st.sampled_from(["Z", "+00:00", "-05:00", "+14:00", "+05:30", "", "z", "+25:00"])


@st.composite
def event_times(draw):
    moment = draw(st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31)))
    digits = draw(st.integers(0, 9))
    fraction = f"{moment.microsecond:06d}{draw(st.integers(0, 999)):03d}"[:digits]
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + ("." + fraction if digits else "") + draw(zones)


@st.composite
def events(draw) -> dict:
    """An event whose every field is usually right and sometimes anything at all."""
    campaign = draw(st.sampled_from([*campaign_ids()[:3], "c999"]))
    right = {
        "event_id": draw(good_ids),
        "event_type": draw(st.sampled_from(EVENT_TYPES)),
        "event_time": draw(event_times())
        if draw(st.integers(0, 3)) == 3
        else f"2026-11-0{draw(st.integers(1, 9))}T10:00:00Z",
        "user_id": draw(good_ids),
        "session_id": draw(good_ids),
        "campaign_id": campaign,
        "ad_id": draw(st.sampled_from([*ad_ids(campaign)[:2], "a001-0", "zz"])),
        "price": draw(st.one_of(st.decimals(-10, 10**9, places=2).map(str), st.integers(-5, 10**9), st.floats())),
    }
    if right["event_type"] != "purchase" and draw(st.integers(0, 3)) < 3:
        right["price"] = None  # usually none but on purchases, as real events
    body = {}
    for name, value in right.items():
        roll = draw(st.integers(0, 39))
        if roll == 39 or value is None:
            continue  # absent
        body[name] = draw(json_values) if roll == 38 else value
    if draw(st.booleans()):
        body.update(draw(st.dictionaries(st.text(max_size=8), json_values, max_size=2)))
    return body


@st.composite
def raw_records(draw) -> bytes:
    body = draw(events())
    text = json.dumps(body, ensure_ascii=draw(st.booleans()), allow_nan=True)
    shape = draw(st.integers(0, 14))
    if shape == 1:
        text += draw(st.sampled_from([" ", "\n", " x", "}", "]", json.dumps(body), ",{}"]))
    elif shape == 2 and body:
        name = draw(st.sampled_from(sorted(body)))
        text = text[:-1] + ("," if len(body) else "") + json.dumps(name) + ": " + json.dumps(draw(json_values)) + "}"
    elif shape == 3:
        text = text[: draw(st.integers(0, len(text)))]
    elif shape == 4:
        return draw(st.binary(max_size=60))
    elif shape == 5:
        text = json.dumps(draw(json_values))
    elif shape == 6:
        text = draw(st.text(max_size=60))
    return text.encode("utf-8", "surrogatepass")


def outcomes(rows) -> dict[tuple, str]:
    return {tuple(r[k] for k in SOURCE_KEY): r.reason or "valid" for r in rows}


def assert_inside_domains(row) -> None:
    for name in ("event_id", "user_id", "session_id", "campaign_id", "ad_id"):
        assert ID.match(row[name]), (name, row[name])
    assert row.event_type in EVENT_TYPES
    assert dt.datetime(2000, 1, 1) <= row.event_time <= PRODUCED_AT.replace(tzinfo=None) + dt.timedelta(minutes=15)
    if row.event_type == "purchase":
        assert Decimal(0) <= row.price < Decimal(10**8)
    else:
        assert row.price is None


@pytest.fixture(scope="module")
def reading_lake(spark, tmp_path_factory):
    settings = lake_settings(tmp_path_factory.mktemp("properties"))
    prepare_lake(spark, settings)
    return settings


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payloads=st.lists(raw_records(), min_size=1, max_size=40), cut=st.integers(0, 40))
def test_each_record_gets_one_outcome_whatever_its_batch(spark, reading_lake, payloads, cut):
    rows = records(payloads, partitions=3)
    whole = classify_records(spark, reading_lake, bronze_frame(spark, rows)).collect()
    assert len(whole) == len(rows) == len({tuple(r[k] for k in SOURCE_KEY) for r in whole})
    for row in whole:
        if row.reason is None:
            assert_inside_domains(row)
        else:
            assert REASON.fullmatch(row.reason), row.reason
    cut = min(cut, len(rows))
    parts = [rows[:cut], rows[cut:]]
    split = [
        r for part in parts if part for r in classify_records(spark, reading_lake, bronze_frame(spark, part)).collect()
    ]
    assert outcomes(split) == outcomes(whole)


@pytest.mark.slow
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payloads=st.lists(raw_records(), min_size=20, max_size=60))
def test_stream_batch_and_verification_agree_on_every_record(spark, tmp_path_factory, payloads):
    settings = lake_settings(tmp_path_factory.mktemp("agree"))
    rows = records(payloads, partitions=3)
    prepare_lake(spark, settings)
    half = len(rows) // 2
    stream(spark, settings, [rows[:half], rows[half:]])
    rebuild(spark, settings)
    for table in (SILVER, QUARANTINE):
        assert sorted_rows(spark, settings, table) == sorted_rows(spark, settings, table, "rebuild"), table.name
    acks = bronze_frame(spark, rows).select(*SOURCE_KEY)
    found = account_for_acks(
        acks.withColumn("kind", acks.kafka_topic),
        classify_log(spark, settings),
        lake.read(spark, settings, SILVER),
        lake.read(spark, settings, QUARANTINE),
    )
    assert found.where("status = 'lost'").count() == 0
