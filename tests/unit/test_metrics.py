import datetime as dt
from decimal import Decimal

import pytest
from pyspark.sql import Row
from pyspark.testing import assertDataFrameEqual

from jobs.tables import CAMPAIGN_MINUTE_METRICS
from jobs.transforms.metrics import affected_windows, campaign_minute_metrics

pytestmark = pytest.mark.unit

T0 = dt.datetime(2026, 11, 20, 10, 0, 0)
SCHEMA = (
    "event_id STRING, event_type STRING, event_time TIMESTAMP, user_id STRING, campaign_id STRING, price DECIMAL(10,2)"
)


def test_counts_distinct_users_and_exact_revenue(spark):
    events = spark.createDataFrame(
        [
            ("1", "purchase", T0, "u1", "c1", Decimal("0.10")),
            ("2", "purchase", T0 + dt.timedelta(seconds=59), "u2", "c1", Decimal("0.20")),
            ("3", "purchase", T0 + dt.timedelta(seconds=30), "u1", "c1", Decimal("99999999.99")),
            ("4", "purchase", T0 + dt.timedelta(seconds=60), "u1", "c1", Decimal("1.00")),
            ("5", "click", T0, "u3", "c1", None),
        ],
        SCHEMA,
    )
    expected = spark.createDataFrame(
        [
            ("c1", "purchase", T0, T0.date(), 3, 2, Decimal("100000000.29")),
            ("c1", "purchase", T0 + dt.timedelta(minutes=1), T0.date(), 1, 1, Decimal("1.00")),
            ("c1", "click", T0, T0.date(), 1, 1, Decimal("0.00")),
        ],
        CAMPAIGN_MINUTE_METRICS.ddl,
    )
    assertDataFrameEqual(campaign_minute_metrics(events), expected)


def test_affected_windows_are_the_minutes_touched(spark):
    events = spark.createDataFrame([("1", "click", T0 + dt.timedelta(seconds=5), "u1", "c1", None)] * 2, SCHEMA)
    assert affected_windows(events).collect() == [Row(campaign_id="c1", event_type="click", window_start=T0)]
