"""A process closes its engine state before it exits (eo/runtime/spark.py, close_state_stores)."""

from __future__ import annotations

import pytest

from eo.runtime.spark import close_state_stores

pytestmark = pytest.mark.unit


def _state_store(spark):
    return spark._jvm.org.apache.spark.sql.execution.streaming.state.StateStore


def _dedup_once(spark, tmp_path) -> int:
    """Append ids 1, 1, 2 to the input and run the dedup query until caught up: new ids it emits."""
    spark.createDataFrame([(1,), (1,), (2,)], "event_id int").write.mode("append").parquet(str(tmp_path / "in"))
    stream = spark.readStream.schema("event_id int").parquet(str(tmp_path / "in")).dropDuplicates(["event_id"])
    emitted: list[int] = []
    query = (
        stream.writeStream.foreachBatch(lambda rows, _batch: emitted.append(rows.count()))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return sum(emitted)


def test_closing_stops_state_maintenance_and_a_later_query_reloads_the_state(spark, tmp_path):
    assert _dedup_once(spark, tmp_path) == 2
    assert _state_store(spark).isMaintenanceRunning()  # RocksDB stores open, maintenance running

    close_state_stores()

    assert not _state_store(spark).isMaintenanceRunning()
    # The session goes on: the next batch loads the state from the checkpoint, ids 1 and 2 included.
    assert _dedup_once(spark, tmp_path) == 0
