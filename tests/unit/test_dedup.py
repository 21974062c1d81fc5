import pytest
from pyspark.testing import assertDataFrameEqual

from jobs.transforms.dedup import first_copies

pytestmark = pytest.mark.unit

SCHEMA = "event_id STRING, event_date STRING, price INT, kafka_topic STRING, kafka_partition INT, kafka_offset BIGINT"
DAY = "2026-11-05"


def test_lowest_partition_then_offset_wins(spark):
    events = spark.createDataFrame(
        [("a", DAY, 3, "t", 1, 9), ("a", DAY, 1, "t", 1, 4), ("a", DAY, 2, "t", 2, 0), ("b", DAY, 5, "t", 0, 7)], SCHEMA
    )
    expected = spark.createDataFrame([("a", DAY, 1, "t", 1, 4), ("b", DAY, 5, "t", 0, 7)], SCHEMA)
    assertDataFrameEqual(first_copies(events), expected)


def test_an_event_is_its_id_within_its_day(spark):
    """Copies re-send the event's own time; an id on another day is another event (silver's key)."""
    events = spark.createDataFrame([("a", DAY, 1, "t", 1, 4), ("a", "2026-11-06", 2, "t", 1, 9)], SCHEMA)
    assertDataFrameEqual(first_copies(events), events)
