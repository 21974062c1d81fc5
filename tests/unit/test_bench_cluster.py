"""The bench's cluster phase, without a cluster: the table comparison, the metrics, the run order."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from lab.bench.cluster import (
    COMPARED,
    WORKER_COUNTS,
    cluster_metrics,
    differing,
    executor_conf,
    run_on_clusters,
    table_difference,
)
from lab.bench.report import OTHER_METRICS, summary_markdown
from lab.bench.sizes import PHASES, QUICK

pytestmark = pytest.mark.unit

T = dt.datetime(2026, 11, 26, 10, 0)
SCHEMA = "user_id STRING, session_start TIMESTAMP, revenue DECIMAL(18,2), ingest_batch BIGINT"


def frame(spark, rows):
    return spark.createDataFrame(rows, SCHEMA)


def test_equal_tables_are_equal_whatever_the_row_order(spark):
    rows = [("u1", T, Decimal("1.10"), 1), ("u2", T, Decimal("2.00"), 2)]
    found = table_difference(frame(spark, rows), frame(spark, rows[::-1]))
    assert found == {"rows": 2, "other_rows": 2, "only_reference": 0, "only_other": 0, "equal": True}


def test_a_value_a_missing_row_or_a_copy_makes_tables_differ(spark):
    rows = [("u1", T, Decimal("1.10"), 1), ("u2", T, Decimal("2.00"), 2)]
    changed = [("u1", T, Decimal("1.11"), 1), rows[1]]  # a cent is a difference: no tolerance
    assert table_difference(frame(spark, rows), frame(spark, changed))["only_other"] == 1
    assert not table_difference(frame(spark, rows), frame(spark, rows[:1]))["equal"]
    doubled = table_difference(frame(spark, rows), frame(spark, [*rows, rows[0]]))
    assert not doubled["equal"] and doubled["only_other"] == 1  # rows compare as multisets


def test_ignored_columns_are_left_out_and_other_columns_must_match(spark):
    rows = [("u1", T, Decimal("1.10"), 1)]
    renumbered = [("u1", T, Decimal("1.10"), 7)]
    assert not table_difference(frame(spark, rows), frame(spark, renumbered))["equal"]
    assert table_difference(frame(spark, rows), frame(spark, renumbered), ignore=["ingest_batch"])["equal"]
    fewer = frame(spark, rows).drop("revenue")
    assert table_difference(frame(spark, rows), fewer) == {"equal": False, "columns": ["revenue"]}


def test_every_table_the_stream_writes_is_compared():
    from eo.core.tables import GOLD

    assert [t.name for t in COMPARED] == ["bronze", "quarantine", "silver", *(t.name for t in GOLD)]


def equal_tables(equal: bool = True) -> dict[str, dict]:
    return {t.name: {"equal": equal} for t in COMPARED}


def test_metrics_are_the_events_per_s_of_each_cluster_and_one_verdict_for_all_tables():
    runs = {1: {"events_per_s": 9_000}, 2: {"events_per_s": 15_000}}
    assert cluster_metrics(runs, {1: equal_tables(), 2: equal_tables()}) == {
        "cluster_workers_1_events_per_s": 9_000,
        "cluster_workers_2_events_per_s": 15_000,
        "cluster_tables_equal": True,
    }
    one_differs = {1: equal_tables(), 2: {**equal_tables(), "silver": {"equal": False}}}
    assert cluster_metrics(runs, one_differs)["cluster_tables_equal"] is False
    assert differing(one_differs) == ["2 workers: silver"]


def test_a_run_that_was_not_compared_is_not_equal():
    metrics = cluster_metrics({1: {"events_per_s": 9_000}}, {1: equal_tables()})
    assert metrics["cluster_tables_equal"] is False and metrics["cluster_workers_2_events_per_s"] is None


class FakeCluster:
    def __init__(self, workers: int, calls: list) -> None:
        self.workers, self.calls, self.master_url = workers, calls, f"spark://127.0.0.1:7177#{workers}"

    def start(self) -> None:
        self.calls.append(("start", self.workers))

    def status(self) -> dict:
        return {"workers": self.workers}

    def stop(self) -> None:
        self.calls.append(("stop", self.workers))


def test_each_cluster_is_started_used_and_stopped_before_the_next():
    calls = []

    def job(workers, master):
        calls.append(("job", master))
        return {"events_per_s": workers}

    runs = run_on_clusters(lambda n: FakeCluster(n, calls), job, lambda text: None)
    assert runs == {1: {"events_per_s": 1}, 2: {"events_per_s": 2}} and WORKER_COUNTS == (1, 2)
    assert calls == [
        ("start", 1), ("job", "spark://127.0.0.1:7177#1"), ("stop", 1),
        ("start", 2), ("job", "spark://127.0.0.1:7177#2"), ("stop", 2),
    ]  # fmt: skip


def test_a_failed_job_still_stops_its_cluster():
    calls = []

    def job(workers, master):
        raise RuntimeError("the job failed")

    with pytest.raises(RuntimeError):
        run_on_clusters(lambda n: FakeCluster(n, calls), job, lambda text: None)
    assert calls == [("start", 1), ("stop", 1)]


def test_executors_take_one_core_per_worker():
    assert executor_conf(2, "2g") == {
        "spark.cores.max": "2",
        "spark.executor.cores": "1",
        "spark.executor.memory": "2g",
    }


def test_the_quick_phase_reuses_the_pipeline_phases_lake_and_runs_before_the_live_phases():
    assert (QUICK.cluster_events, QUICK.cluster_batch) == (QUICK.pipeline_events, QUICK.pipeline_batch)
    assert PHASES.index("pipeline") < PHASES.index("cluster") < PHASES.index("fixed_cost")


def test_the_summary_shows_the_boolean_as_a_word():
    metrics = dict.fromkeys(OTHER_METRICS, 1.0) | {"cluster_tables_equal": False}
    result = {
        "run_id": "r",
        "profile": "quick",
        "seconds": 1.0,
        "machine": {"cores": 2, "memory_gb": 24.0},
        "versions": {},
        "metrics": metrics,
    }
    assert "| cluster_tables_equal | false |" in summary_markdown(result)
