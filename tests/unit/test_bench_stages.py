"""The bench's per-stage split, read from a Spark event log (lab/bench/stages.py)."""

from __future__ import annotations

import json

import pytest

from lab.bench.stages import event_log_conf, split, split_lines

pytestmark = pytest.mark.unit


def _task(stage: int, run_ms: int, kafka: int = 0, shuffled: int = 0, written: int = 0) -> dict:
    return {
        "Event": "SparkListenerTaskEnd",
        "Stage ID": stage,
        "Task Metrics": {
            "Executor Run Time": run_ms,
            "Executor CPU Time": run_ms * 500_000,  # half of it in the JVM, in ns
            "JVM GC Time": 10,
            "Input Metrics": {"Records Read": kafka},
            "Shuffle Read Metrics": {"Total Records Read": shuffled},
            "Shuffle Write Metrics": {"Shuffle Records Written": written, "Shuffle Bytes Written": written * 1_000},
            "Result Size": 2_000,
        },
    }


def _job(job: int, stages: list[int], batch: int | None) -> dict:
    properties = {"spark.job.description": "x"} | ({"streaming.sql.batchId": str(batch)} if batch is not None else {})
    return {"Event": "SparkListenerJobStart", "Job ID": job, "Stage IDs": stages, "Properties": properties}


def _done(stage: int, seconds: float) -> dict:
    info = {"Stage ID": stage, "Submission Time": 1_000, "Completion Time": 1_000 + seconds * 1e3}
    return {"Event": "SparkListenerStageCompleted", "Stage Info": info}


def test_a_batch_job_is_split_by_stage_and_other_jobs_are_left_out(tmp_path):
    events = [
        _job(0, [0], None),  # a table check before the query: not a micro-batch
        _task(0, 5_000, kafka=9),
        _job(1, [1, 2, 3], batch=7),  # stage 1 was skipped: it ran no task
        _task(2, 1_500, kafka=100, written=100),
        _task(2, 500, kafka=50, written=50),
        _done(2, 1.25),
        _task(3, 2_000, shuffled=150),
        _task(3, 1_000, kafka=20),
        _done(3, 2.0),
    ]
    (tmp_path / "local-1").write_text("\n".join(json.dumps(e) for e in events) + "\n")
    [batch] = split(tmp_path)
    assert batch["batch"] == 7
    first, second = batch["stages"]
    assert (first["stage"], first["reads"], first["tasks"], first["wall_s"]) == (2, "Kafka", 2, 1.25)
    assert (first["task_s"], first["jvm_cpu_s"], first["gc_s"]) == (2.0, 1.0, 0.02)
    assert (first["input_records"], first["shuffle_written_records"], first["shuffle_written_mb"]) == (150, 150, 0.15)
    assert (second["reads"], second["shuffle_read_records"], second["result_mb"]) == ("Kafka + shuffle", 150, 0.0)
    table = split_lines({"guarded": {"stages": [batch]}})
    assert "| guarded | 7 | 2 | Kafka + shuffle | 2 | 2.00 | 3.00 | 1.50 | 0.0 | 0.0 |" in table


def test_no_log_no_table(tmp_path):
    assert split(tmp_path) == [] and split_lines({"guarded": {"stages": []}}) == []


def test_the_conf_names_a_folder_spark_can_write(tmp_path):
    conf = event_log_conf(tmp_path / "logs")
    assert (tmp_path / "logs").is_dir() and conf["spark.eventLog.dir"].startswith("file:///")
    assert conf["spark.eventLog.compress"] == "false" and conf["spark.eventLog.rolling.enabled"] == "false"
