"""The engine's figures of a micro-batch, read from Spark's own progress report (streaming/engine_report.py)."""

from __future__ import annotations

import json

import pytest

from streaming.engine_report import batch_profile, new_profiles, profile_line

pytestmark = pytest.mark.unit


def _two_state_progress(spark, tmp_path) -> dict:
    """A query shaped like the job's: dedup by id (state 1), then by tuple (state 2), one batch.

    Ten records: eight ids (two copies); the eight new events fall in three tuples."""
    rows = [(i % 8, f"t{i % 3}") for i in range(10)]
    spark.createDataFrame(rows, "id int, tuple string").write.parquet(str(tmp_path / "in"))
    stream = spark.readStream.schema("id int, tuple string").parquet(str(tmp_path / "in"))
    stream = stream.dropDuplicates(["id"]).dropDuplicates(["tuple"])
    query = (
        stream.writeStream.foreachBatch(lambda rows, _batch: rows.count())
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return next(json.loads(p.json) for p in query.recentProgress if p["numInputRows"])


def test_states_are_numbered_in_the_order_the_plan_applies_them(spark, tmp_path):
    profile = batch_profile(_two_state_progress(spark, tmp_path))

    ids, tuples = profile["states"]
    assert (ids["state"], ids["keys"], ids["written"], ids["dropped"]) == (1, "event ids", 8, 2)
    assert (tuples["state"], tuples["keys"], tuples["written"], tuples["dropped"]) == (2, "user tuples", 3, 5)
    assert profile["records"] == 10
    assert all(s["lookup_s"] >= 0 and s["write_s"] >= 0 and s["commit_s"] >= 0 for s in profile["states"])


PROGRESS = {
    "batchId": 7,
    "numInputRows": 500_000,
    "durationMs": {"addBatch": 10_251, "queryPlanning": 112, "walCommit": 75, "commitOffsets": 45, "latestOffset": 3},
    "stateOperators": [  # as Spark lists them: the sink's side first
        {
            "operatorName": "dedupe",
            "numRowsUpdated": 966_464,
            "commitTimeMs": 836,
            "customMetrics": {"rocksdbGetLatency": 1937, "rocksdbPutLatency": 1113, "numDroppedDuplicateRows": 56},
        },
        {  # the first-copy operator: Spark counts no dropped copies for it
            "operatorName": "flatMapGroupsWithState",
            "numRowsUpdated": 485_774,
            "commitTimeMs": 368,
            "customMetrics": {"rocksdbGetLatency": 682, "rocksdbPutLatency": 450},
        },
    ],
}


def test_a_progress_report_becomes_seconds_per_step_and_per_state():
    profile = batch_profile(PROGRESS)

    assert profile["batch"] == 7 and profile["batch_s"] == 10.251
    assert profile["around_s"] == {"planning": 0.112, "offset log": 0.075, "commit log": 0.045}
    first, second = profile["states"]
    assert (first["written"], first["lookup_s"], first["write_s"], first["commit_s"]) == (485_774, 0.682, 0.45, 0.368)
    assert first["dropped"] is None and (second["written"], second["dropped"]) == (966_464, 56)


def test_the_log_line_names_each_state_and_its_figures():
    line = profile_line("events", batch_profile(PROGRESS))

    assert line.startswith("[events] batch 7 in the engine: foreachBatch 10.25 s, around it planning 0.11")
    assert "state 1 (event ids): 485,774 written, RocksDB lookups 0.68 writes 0.45 commit 0.37" in line
    assert "state 2 (user tuples): 966,464 written, 56 dropped, RocksDB lookups 1.94" in line


def test_only_batches_not_yet_reported_and_with_records_are_profiled():
    idle = {**PROGRESS, "batchId": 9, "numInputRows": 0}
    later = {**PROGRESS, "batchId": 8}

    assert [p["batch"] for p in new_profiles([later, idle, PROGRESS], after=-1)] == [7, 8]
    assert [p["batch"] for p in new_profiles([later, idle, PROGRESS], after=7)] == [8]
