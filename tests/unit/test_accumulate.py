"""Adding counts is exactly-once only through the transaction id: a replayed batch adds nothing."""

from __future__ import annotations

import pytest
from pyspark.testing import assertDataFrameEqual

from jobs import lake
from lab.bench.ysb import COUNTS_DDL, create_counts_table

pytestmark = pytest.mark.unit


def test_a_replayed_batch_is_skipped_not_added_twice(spark, tmp_path):
    path = str(tmp_path / "counts")
    create_counts_table(spark, path)
    batch = spark.createDataFrame([("c1", 0, 3), ("c2", 0, 1)], COUNTS_DDL)
    key, values = ("campaign_id", "window_start"), ["views"]
    assert lake.accumulate(spark, path, batch, key, values, ("ysb", 0))
    assert lake.accumulate(spark, path, batch, key, values, ("ysb", 0)) == {}  # the replay: skipped
    later = spark.createDataFrame([("c1", 0, 2)], COUNTS_DDL)
    lake.accumulate(spark, path, later, key, values, ("ysb", 1))
    expected = spark.createDataFrame([("c1", 0, 5), ("c2", 0, 1)], COUNTS_DDL)
    assertDataFrameEqual(spark.read.format("delta").load(path), expected)
