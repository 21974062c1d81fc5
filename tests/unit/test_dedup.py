import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from eo.core.transforms.dedup import first_copies

pytestmark = pytest.mark.unit

SCHEMA = "event_id STRING, event_date STRING, price INT, kafka_topic STRING, kafka_partition INT, kafka_offset BIGINT"
DAY = "2026-11-05"


def unmarked(spark, rows):
    """Events read from records ingested before bronze marked ingest batches (null)."""
    return spark.createDataFrame(rows, SCHEMA).withColumn("ingest_batch", F.lit(None).cast("bigint"))


def test_without_ingest_batches_the_lowest_partition_then_offset_wins(spark):
    events = unmarked(
        spark, [("a", DAY, 3, "t", 1, 9), ("a", DAY, 1, "t", 1, 4), ("a", DAY, 2, "t", 2, 0), ("b", DAY, 5, "t", 0, 7)]
    )
    expected = spark.createDataFrame([("a", DAY, 1, "t", 1, 4), ("b", DAY, 5, "t", 0, 7)], SCHEMA)
    assertDataFrameEqual(first_copies(events), expected)


def test_a_retry_restamped_across_midnight_is_the_same_event(spark):
    """An event is its id, across all history: a copy carrying another day is still a copy."""
    events = unmarked(spark, [("a", DAY, 1, "t", 1, 4), ("a", "2026-11-06", 2, "t", 1, 9)])
    assertDataFrameEqual(first_copies(events), spark.createDataFrame([("a", DAY, 1, "t", 1, 4)], SCHEMA))


def test_the_earliest_ingest_batch_wins_and_records_ingested_before_marks_came_first(spark):
    """Bronze records the micro-batch that ingested each record; an older release did not (null)."""
    schema = f"{SCHEMA}, ingest_batch BIGINT"
    events = spark.createDataFrame(
        [
            ("a", DAY, 1, "t", 1, 4, 7),  # ingested in batch 7: after batch 5, whatever its partition
            ("a", DAY, 2, "t", 2, 0, 5),
            ("b", DAY, 3, "t", 0, 0, 5),
            ("b", DAY, 4, "t", 1, 9, None),  # ingested before batches were marked
            ("c", DAY, 5, "t", 1, 3, 9),
            ("c", DAY, 6, "t", 0, 8, 9),  # same batch: the lower partition
        ],
        schema,
    )
    expected = [("a", DAY, 2, "t", 2, 0), ("b", DAY, 4, "t", 1, 9), ("c", DAY, 6, "t", 0, 8)]
    assertDataFrameEqual(first_copies(events), spark.createDataFrame(expected, SCHEMA))
