"""`python -m lab.bench --quick` end to end: every phase runs and the report has its schema.

Speed is never asserted here (benchmarks report figures, tests check plumbing); only that each
metric was measured, and that the three YSB systems counted the same views.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from eo.runtime.config import REPO_ROOT
from lab.bench.report import PLOTS, REQUIRED_METRICS, TARGETS

pytestmark = [pytest.mark.bench, pytest.mark.integration, pytest.mark.slow]

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_quick_bench_writes_a_complete_report(tmp_path):
    env = {**os.environ, "EO_BENCH_KAFKA_PORT": "49192", "EO_BENCH_SPARK_PORT": "7277"}
    command = [sys.executable, "-m", "lab.bench", "--quick", "--run-id", "quick-test", "--out-root", str(tmp_path)]
    finished = subprocess.run(command, cwd=REPO_ROOT, env=env, timeout=1800)
    assert finished.returncode == 0, "a bench phase failed; see its output above"

    run = tmp_path / "quick-test"
    report = json.loads((run / "bench.json").read_text())
    metrics = report["metrics"]
    # cluster_tables_equal is a bool, which is an int: measured means not None here too.
    missing = [name for name in REQUIRED_METRICS if not isinstance(metrics.get(name), int | float)]
    assert not missing, f"metrics not measured: {missing}"
    assert report["machine"]["cores"] >= 1 and report["machine"]["memory_gb"] > 0
    assert {"pyspark", "delta-spark", "apache-flink", "kafka", "java"} <= set(report["versions"])
    assert report["ysb"]["agreement"]["agree"] and report["ysb"]["agreement"]["views"] > 0
    assert len(report["rebuild"]["sizes"]) == 3 and len(report["history"]["runs"]) == 2
    assert set(report["pipeline"]) == {"guarded", "unguarded", "dedup_floor", "raw_parse"}
    assert all(job["events"] > 0 for job in report["pipeline"].values())
    # The floor keeps one copy of each event, as the guarded job does; the unguarded job every copy.
    silver = {mode: sum(b["silver"] for b in job["batch_lines"]) for mode, job in report["pipeline"].items()
              if mode != "raw_parse"}  # fmt: skip
    assert silver["dedup_floor"] == silver["guarded"] < silver["unguarded"], silver
    # Spark's event logs, read back: the guarded job's batches run four stages (two states, then the
    # sessions' owners), the floor two (one shuffle into its state), the others one.
    stage_counts = {mode: {len(b["stages"]) for b in job["stages"]} for mode, job in report["pipeline"].items()}
    assert stage_counts == {"guarded": {4}, "unguarded": {1}, "dedup_floor": {2}, "raw_parse": {1}}, stage_counts
    assert set(report["cluster"]["runs"]) == {"1", "2"} and metrics["cluster_tables_equal"] is True
    fixed = report["fixed_cost"]
    assert len(fixed["bursts"]) == report["sizes"]["fixed_cost_bursts"]
    assert 0 <= fixed["split_bursts"] <= len(fixed["bursts"])
    assert report["latency"]["events"] > 0 and report["latency"]["cdf"]
    assert report["sustained"]["steps"] and {"cold", "standby"} <= set(report["recovery"])
    assert [row["metric"] for row in report["targets"]] == [name for name, *_ in TARGETS]
    for plot in PLOTS:
        assert (run / plot).read_bytes()[:8] == PNG_MAGIC, plot
    assert "| metric | target | measured | met |" in (run / "summary.md").read_text()
    assert (tmp_path / "latest").resolve() == run.resolve()
