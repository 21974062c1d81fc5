import pytest
from pyspark.testing import assertDataFrameEqual

from jobs.transforms.dedup import first_copies

pytestmark = pytest.mark.unit

SCHEMA = "event_id STRING, price INT, kafka_topic STRING, kafka_partition INT, kafka_offset BIGINT"


def test_lowest_partition_then_offset_wins(spark):
    events = spark.createDataFrame(
        [("a", 3, "t", 1, 9), ("a", 1, "t", 1, 4), ("a", 2, "t", 2, 0), ("b", 5, "t", 0, 7)], SCHEMA
    )
    expected = spark.createDataFrame([("a", 1, "t", 1, 4), ("b", 5, "t", 0, 7)], SCHEMA)
    assertDataFrameEqual(first_copies(events), expected)
