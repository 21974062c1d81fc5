"""The first-copy state is Spark's own deduplication over rows sorted into arrival order
(eo/core/transforms/dedup.py). Spark refuses any sort in a streaming plan at start, so queries
start through `streaming.plan.start_checked`: Spark's checks run on the rest of the plan
(jvm/reader ArrivalOrder), and must still refuse anything else they refuse."""

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import functions as F

from eo.core.transforms.dedup import check_streaming_plan, first_copy_state
from streaming.plan import UNSUPPORTED_OPERATION_CHECK, start_checked

pytestmark = pytest.mark.unit


@pytest.fixture
def rows(spark):
    rate = spark.readStream.format("rate").option("rowsPerSecond", 10).load()
    return rate.select(
        (F.col("value") % 5).cast("string").alias("_first"),
        (F.col("value") % 2).cast("int").alias("kafka_partition"),
        F.col("value").alias("kafka_offset"),
        F.lit(False).alias("_seed"),
    )


def test_spark_alone_refuses_the_sort_the_state_needs(spark, rows):
    with pytest.raises(AnalysisException, match="Sorting is not supported"):
        first_copy_state(rows, "_first", "_seed").writeStream.format("noop").start()


def test_the_check_passes_the_first_copy_state(rows):
    check_streaming_plan(first_copy_state(rows, "_first", "_seed").where(F.col("kafka_offset") > 0))


@pytest.mark.parametrize(
    "unsupported",
    [
        pytest.param(lambda plan: plan.orderBy("kafka_offset"), id="a sort of the whole stream"),
        pytest.param(lambda plan: plan.sortWithinPartitions("kafka_offset"), id="a sort of our own kind elsewhere"),
        pytest.param(lambda plan: plan.groupBy("_first").count(), id="an aggregation appended without watermark"),
        pytest.param(lambda plan: plan.exceptAll(plan), id="an except of two streams"),
    ],
)
def test_the_check_still_refuses_what_spark_refuses(rows, unsupported):
    with pytest.raises(AnalysisException):
        check_streaming_plan(unsupported(first_copy_state(rows, "_first", "_seed")))


def test_start_runs_the_query_and_puts_the_check_back(spark, rows, tmp_path):
    before = spark.conf.get(UNSUPPORTED_OPERATION_CHECK)
    plan = first_copy_state(rows, "_first", "_seed")
    writer = plan.writeStream.format("noop").option("checkpointLocation", str(tmp_path / "c")).trigger(once=True)
    query = start_checked(writer, plan)
    try:
        query.awaitTermination(60)
        assert query.exception() is None
    finally:
        query.stop()
    assert spark.conf.get(UNSUPPORTED_OPERATION_CHECK) == before
    with pytest.raises(AnalysisException):
        start_checked(plan.orderBy("kafka_offset").writeStream.format("noop"), plan.orderBy("kafka_offset"))
    assert spark.conf.get(UNSUPPORTED_OPERATION_CHECK) == before
