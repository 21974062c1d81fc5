import pytest
from pyspark.testing import assertDataFrameEqual

from eo.core.transforms.dedup import first_copies

pytestmark = pytest.mark.unit

SCHEMA = "event_id STRING, event_date STRING, price INT, kafka_topic STRING, kafka_partition INT, kafka_offset BIGINT"
DAY = "2026-11-05"


def test_lowest_partition_then_offset_wins(spark):
    events = spark.createDataFrame(
        [("a", DAY, 3, "t", 1, 9), ("a", DAY, 1, "t", 1, 4), ("a", DAY, 2, "t", 2, 0), ("b", DAY, 5, "t", 0, 7)], SCHEMA
    )
    expected = spark.createDataFrame([("a", DAY, 1, "t", 1, 4), ("b", DAY, 5, "t", 0, 7)], SCHEMA)
    assertDataFrameEqual(first_copies(events), expected)


def test_a_retry_restamped_across_midnight_is_the_same_event(spark):
    """An event is its id, across all history: a copy carrying another day is still a copy."""
    events = spark.createDataFrame([("a", DAY, 1, "t", 1, 4), ("a", "2026-11-06", 2, "t", 1, 9)], SCHEMA)
    assertDataFrameEqual(first_copies(events), spark.createDataFrame([("a", DAY, 1, "t", 1, 4)], SCHEMA))
