"""The engine's figures of a micro-batch, read from Spark's own progress report (streaming/engine_report.py)."""

from __future__ import annotations

import json

import pytest

from streaming.engine_report import batch_profile, new_profiles, profile_line

pytestmark = pytest.mark.unit


def _progress(spark, tmp_path) -> dict:
    """A query shaped like the job's: dedup by id, one batch. Ten records: eight ids (two copies)."""
    rows = [(i % 8, f"t{i % 3}") for i in range(10)]
    spark.createDataFrame(rows, "id int, tuple string").write.parquet(str(tmp_path / "in"))
    stream = spark.readStream.schema("id int, tuple string").parquet(str(tmp_path / "in"))
    query = (
        stream.dropDuplicates(["id"])
        .writeStream.foreachBatch(lambda rows, _batch: rows.count())
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return next(json.loads(p.json) for p in query.recentProgress if p["numInputRows"])


def test_the_state_is_read_from_a_real_progress_report(spark, tmp_path):
    profile = batch_profile(_progress(spark, tmp_path))

    (ids,) = profile["states"]
    assert (ids["state"], ids["keys"], ids["written"], ids["dropped"]) == (1, "event ids", 8, 2)
    assert profile["records"] == 10
    assert ids["lookup_s"] >= 0 and ids["write_s"] >= 0 and ids["commit_s"] >= 0


PROGRESS = {
    "batchId": 7,
    "numInputRows": 500_000,
    "durationMs": {"addBatch": 10_251, "queryPlanning": 112, "walCommit": 75, "commitOffsets": 45, "latestOffset": 3},
    "stateOperators": [
        {
            "operatorName": "dedupe",
            "numRowsUpdated": 485_774,
            "commitTimeMs": 368,
            "customMetrics": {"rocksdbGetLatency": 682, "rocksdbPutLatency": 450, "numDroppedDuplicateRows": 14_226},
        },
    ],
}


def test_a_progress_report_becomes_seconds_per_step_and_per_state():
    profile = batch_profile(PROGRESS)

    assert profile["batch"] == 7 and profile["batch_s"] == 10.251
    assert profile["around_s"] == {"planning": 0.112, "offset log": 0.075, "commit log": 0.045}
    (ids,) = profile["states"]
    assert (ids["written"], ids["dropped"], ids["lookup_s"], ids["write_s"], ids["commit_s"]) == (
        485_774,
        14_226,
        0.682,
        0.45,
        0.368,
    )


def test_an_operator_beyond_the_known_states_is_named_by_spark():
    """Spark lists operators from the sink back: one before the dedup is state 2, by its name."""
    extra = {"operatorName": "stateStoreSave", "numRowsUpdated": 3, "commitTimeMs": 1, "customMetrics": {}}
    profile = batch_profile({**PROGRESS, "stateOperators": [extra, *PROGRESS["stateOperators"]]})

    assert [(s["state"], s["keys"]) for s in profile["states"]] == [(1, "event ids"), (2, "stateStoreSave")]


def test_the_log_line_names_the_state_and_its_figures():
    line = profile_line("events", batch_profile(PROGRESS))

    assert line.startswith("[events] batch 7 in the engine: foreachBatch 10.25 s, around it planning 0.11")
    assert "state 1 (event ids): 485,774 written, 14,226 dropped, RocksDB lookups 0.68 writes 0.45 commit 0.37" in line


def test_only_batches_not_yet_reported_and_with_records_are_profiled():
    idle = {**PROGRESS, "batchId": 9, "numInputRows": 0}
    later = {**PROGRESS, "batchId": 8}

    assert [p["batch"] for p in new_profiles([later, idle, PROGRESS], after=-1)] == [7, 8]
    assert [p["batch"] for p in new_profiles([later, idle, PROGRESS], after=7)] == [8]
