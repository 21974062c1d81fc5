import datetime as dt
from decimal import Decimal

import pytest
from pyspark.testing import assertDataFrameEqual

from jobs.tables import USER_SESSIONS
from jobs.transforms.sessions import sessionize

pytestmark = pytest.mark.unit

T0 = dt.datetime(2026, 11, 20, 23, 50, 0)
SCHEMA = "event_id STRING, event_type STRING, event_time TIMESTAMP, user_id STRING, price DECIMAL(10,2)"


def at(minutes: float) -> dt.datetime:
    return T0 + dt.timedelta(minutes=minutes)


def test_a_gap_of_exactly_30_minutes_starts_a_new_session(spark):
    events = spark.createDataFrame(
        [
            ("1", "impression", at(0), "u1", None),
            ("2", "purchase", at(29.99), "u1", Decimal("2.50")),  # just inside the gap
            ("3", "impression", at(59.99), "u1", None),  # exactly 30 minutes later: new session
            ("4", "impression", at(5), "u2", None),
        ],
        SCHEMA,
    )
    expected = spark.createDataFrame(
        [
            ("u1", at(0), at(29.99), at(0).date(), 2, Decimal("2.50")),
            ("u1", at(59.99), at(59.99), at(59.99).date(), 1, Decimal("0.00")),
            ("u2", at(5), at(5), at(5).date(), 1, Decimal("0.00")),
        ],
        USER_SESSIONS.ddl,
    )
    assertDataFrameEqual(sessionize(events), expected)


def test_sessions_cross_midnight_and_are_dated_by_their_start(spark):
    events = spark.createDataFrame([("1", "click", at(5), "u1", None), ("2", "click", at(25), "u1", None)], SCHEMA)
    (row,) = sessionize(events).collect()
    assert row.session_date == dt.date(2026, 11, 20) and row.session_end.date() == dt.date(2026, 11, 21)
