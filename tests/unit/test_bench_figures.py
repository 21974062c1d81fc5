"""The benchmark's arithmetic: sizes, the scaling exponent, counts agreement, targets met or not,
the latency join over Delta logs, percentiles, the sustained-rate search and the job's log lines."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lab.bench.__main__ import main
from lab.bench.commit_log import DeltaLog, LakeClock, batch_commit_times, commit_times_of, latencies
from lab.bench.job_log import batches, busy_batches, ready_seconds, seed_seconds
from lab.bench.latency import distribution, median_and_spread, search_sustained_rate
from lab.bench.pipeline import figures, pairs, pooled
from lab.bench.report import OTHER_METRICS, REQUIRED_METRICS, TARGETS, summary_markdown, target_rows
from lab.bench.scaling import scaling_exponent
from lab.bench.sizes import PHASES, QUICK, count, counts
from lab.bench.ysb import compare_counts

pytestmark = pytest.mark.unit

T0 = 1_800_000_000.0  # seconds since the epoch


def test_sizes_read_like_people_write_them():
    assert count("1M") == 1_000_000 and count("500k") == 500_000 and count("2_500") == 2_500
    assert counts("1M,10M, 50M") == (1_000_000, 10_000_000, 50_000_000)


def _catch_up(events: int, seconds: float, **extra) -> dict:
    return {"events": events, "seconds": seconds, "events_per_s": round(events / seconds), **extra}


def test_the_pipelines_pairs_are_pooled_over_all_their_events_and_seconds():
    """Two pairs on a noisy machine: the guarded and unguarded figures are each job's events over
    its seconds in all its runs (not a mean of rates), and the ratio is theirs; each pair keeps
    its own ratio beside them."""
    driven = {"driver_bytes": {"collected": 3_000}, "driver_rewrites": {"bytes_read": 500}}
    guarded = [_catch_up(2_000_000, 80.0, **driven), _catch_up(2_000_000, 100.0)]
    unguarded = [_catch_up(2_000_000, 50.0), _catch_up(2_000_000, 70.0)]
    runs = {"guarded": guarded[0], "unguarded": unguarded[0], "dedup_floor": _catch_up(2_000_000, 64.0),
            "raw_parse": _catch_up(2_000_000, 25.0)}  # fmt: skip
    found = figures(runs, {"guarded": guarded, "unguarded": unguarded}, input_bytes=1_000_000)
    assert found["pipeline_events_per_s"] == pooled(guarded) == 22_222  # 4M in 180 s, not (25k + 20k) / 2
    assert found["unguarded_events_per_s"] == 33_333
    assert found["guarantee_overhead_ratio"] == round(22_222 / 33_333, 3) == 0.667
    assert found["dedup_floor_ratio"] == round(31_250 / 33_333, 3)
    assert found["raw_parse_events_per_s"] == 80_000
    assert found["driver_bytes_per_input_byte"] == 0.003 and found["driver_rewrite_bytes_per_input_byte"] == 0.0005
    assert pairs({"guarded": guarded, "unguarded": unguarded}) == [
        {"guarded": 25_000, "unguarded": 40_000, "ratio": 0.625},
        {"guarded": 20_000, "unguarded": 28_571, "ratio": 0.7},
    ]
    one = figures(runs, {"guarded": guarded[:1], "unguarded": unguarded[:1]}, input_bytes=1_000_000)
    assert one["guarantee_overhead_ratio"] == 0.625  # one pair: its own ratio
    with pytest.raises(ValueError):
        pairs({"guarded": guarded, "unguarded": unguarded[:1]})  # a pair without its other half


def test_scaling_exponent_is_the_log_log_slope():
    assert scaling_exponent([(1e6, 10), (1e7, 100), (5e7, 500)]) == pytest.approx(1.0)
    assert scaling_exponent([(1e6, 10), (1e7, 1000)]) == pytest.approx(2.0)
    assert scaling_exponent([(1e6, 10)]) is None


def test_counts_must_agree_window_by_window():
    a = {"system": "a", "counts": {("c1", 0): 3, ("c2", 0): 1}}
    b = {"system": "b", "counts": {("c1", 0): 3, ("c2", 0): 1}}
    c = {"system": "c", "counts": {("c1", 0): 3}}
    assert compare_counts([a, b])["agree"]
    verdict = compare_counts([a, b, c])
    assert not verdict["agree"] and verdict["disagreeing_windows"] == {"b": 0, "c": 1}
    assert verdict["samples"] == {"c": [{"key": ["c2", 0], "a": 1, "c": None}]}
    assert verdict["views_per_system"] == {"a": 4, "b": 4, "c": 3}


# -- targets ---------------------------------------------------------------------------------
def test_pyflink_counts_read_committed_files_only_and_uncommitted_rows_are_counted(tmp_path):
    from lab.bench.flink import read_counts, uncommitted_rows

    (tmp_path / "part-0-0").write_text("c000,1000,3\nc000,1000,2\nc001,1000,4\n")
    (tmp_path / ".part-1-0.inprogress.abc").write_text("c000,1000,7\nc002,1000,1\n")
    (tmp_path / ".part-0-0.crc").write_bytes(b"\x00\x01")
    assert read_counts(tmp_path) == {("c000", 1000): 5, ("c001", 1000): 4}
    assert uncommitted_rows(tmp_path) == 2


def test_targets_compare_with_constants_and_other_metrics():
    rows = target_rows(
        {
            "fixed_cost_1k_s": 1.2,
            "pipeline_events_per_s": 120_000,
            "raw_parse_events_per_s": 300_000,
            "latency_p50_s": 3.0,
            "latency_p99_s": 6.5,
            "max_sustained_events_per_s": 50_000,
            "guarantee_overhead_ratio": 0.84,
            "ysb_exactly_once_events_per_s": 100,
            "ysb_pyflink_events_per_s": 120,
            "ysb_raw_spark_events_per_s": 110,
        }
    )
    met = {(r["metric"], r["target"]): r["met"] for r in rows}
    assert met[("fixed_cost_1k_s", "<= 1.5")] is True
    assert met[("pipeline_events_per_s", ">= 60,000")] is True
    assert met[("pipeline_events_per_s", ">= 100,000")] is True
    assert met[("pipeline_events_per_s", ">= 0.5 x raw_parse_events_per_s")] is False  # 120k < 150k
    assert met[("latency_p50_s", "<= 3.0")] is True  # the bound itself meets it
    assert met[("latency_p99_s", "<= 6.0")] is False
    assert met[("max_sustained_events_per_s", ">= 50,000")] is True
    assert met[("guarantee_overhead_ratio", ">= 0.7")] is True
    assert met[("guarantee_overhead_ratio", ">= 0.85")] is False
    assert met[("ysb_exactly_once_events_per_s", ">= ysb_pyflink_events_per_s")] is False
    assert met[("ysb_exactly_once_events_per_s", ">= 0.8 x ysb_raw_spark_events_per_s")] is True
    assert met[("rebuild_events_per_s", ">= 300,000")] is None  # not measured: neither met nor missed


def test_every_target_of_the_issue_is_there_and_required():
    targets = {(name, op, target) for name, op, target, _ in TARGETS}
    for expected in [
        ("fixed_cost_1k_s", "<=", 1.5),
        ("pipeline_events_per_s", ">=", 60_000),
        ("pipeline_events_per_s", ">=", 100_000),
        ("pipeline_events_per_s", ">=", ("raw_parse_events_per_s", 0.5)),
        ("latency_p50_s", "<=", 3.0),
        ("latency_p99_s", "<=", 6.0),
        ("max_sustained_events_per_s", ">=", 50_000),
        ("guarantee_overhead_ratio", ">=", 0.7),
        ("guarantee_overhead_ratio", ">=", 0.85),
        ("driver_bytes_per_input_byte", "<=", 0.01),
        ("rebuild_events_per_s", ">=", 300_000),
        ("recovery_standby_first_batch_s", "<=", 5),
        ("recovery_cold_first_batch_s", "<=", 20),
    ]:
        assert expected in targets
    assert {name for name, *_ in TARGETS} | set(OTHER_METRICS) == set(REQUIRED_METRICS)
    assert "raw_parse_events_per_s" in REQUIRED_METRICS and len(REQUIRED_METRICS) == len(set(REQUIRED_METRICS))


def test_the_summary_puts_every_metric_beside_its_target():
    metrics = dict.fromkeys(REQUIRED_METRICS, 1.0)
    result = {
        "run_id": "r",
        "profile": "quick",
        "seconds": 1.0,
        "machine": {"cores": 2, "memory_gb": 24.0},
        "versions": {"pyspark": "4.2.0"},
        "metrics": metrics,
        "sustained": {"steps": [{"rate": 20_000, "achieved_events_per_s": 19_800, "p99_s": 12.0, "held": False}]},
    }
    text = summary_markdown(result)
    for name in REQUIRED_METRICS:
        assert f"| {name}" in text, name
    assert "| 20,000/s |" in text and "| fixed_cost_1k_s (" in text and "<= 1.5 |" in text


def test_the_summary_profiles_each_batch_of_the_guarded_catch_up():
    from streaming.engine_report import batch_profile
    from tests.unit.test_engine_report import PROGRESS

    line = {"batch": 7, "records": 500_000, "seconds": 11.8, "steps": {"read": 10.25, "commit": 1.55}}
    guarded = {"batch_lines": [line, {**line, "batch": 8}], "engine": [batch_profile(PROGRESS)]}
    result = {
        "run_id": "r",
        "profile": "quick",
        "seconds": 1.0,
        "machine": {"cores": 2, "memory_gb": 24.0},
        "versions": {},
        "metrics": {},
        "pipeline": {"guarded": guarded},
    }
    text = summary_markdown(result)

    assert "## Profile of a micro-batch" in text
    # the state: 0.682 + 0.45 + 0.368 s; around: 0.112 + 0.075 + 0.045 s
    assert "| 7 | 500,000 | 11.80 (10.25 + 1.55) | 0.23 | 485,774 keys, 1.50 s |" in text
    assert "| 8 |" not in text  # no engine figures for it: no row


def test_no_engine_figures_no_profile():
    result = {"run_id": "r", "profile": "quick", "seconds": 1.0, "machine": {"cores": 2, "memory_gb": 24.0},
              "versions": {}, "metrics": {}, "pipeline": {"guarded": {"batch_lines": [], "engine": []}}}  # fmt: skip
    assert "Profile of a micro-batch" not in summary_markdown(result)


# -- the latency join over the Delta logs ----------------------------------------------------
def _commit(table, version: int, ms: int, batch: tuple[str, int] | None = None, files: dict | None = None) -> None:
    """A commit file like delta-rs writes: commitInfo (custom_metadata at its top level), adds."""
    log = table / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    info = {"timestamp": ms, "operation": "WRITE"}
    if batch:
        info.update(app_id=batch[0], epoch="1", position=str(batch[1]))
    lines = [json.dumps({"commitInfo": info})]
    for name, stamps in (files or {}).items():
        path = table / name
        path.parent.mkdir(parents=True, exist_ok=True)
        micros = [round(s * 1e6) for s in stamps]
        rows = pa.table(
            {
                "kafka_timestamp": pa.array(micros, pa.timestamp("us", tz="UTC")),
                "kafka_partition": pa.array([0] * len(stamps), pa.int32()),
                "kafka_offset": pa.array(range(len(stamps)), pa.int64()),
            }
        )
        pq.write_table(rows, path)
        lines.append(json.dumps({"add": {"path": name.replace("=", "%3D"), "dataChange": True}}))
    (log / f"{version:020d}.json").write_text("\n".join(lines) + "\n")


def _lake(tmp_path):
    silver, metrics, sessions = (tmp_path / n for n in ("silver", "metrics", "sessions"))
    for table in (silver, metrics, sessions):
        _commit(table, 0, 0)  # the table's creation (Spark): no batch
    ms = int(T0 * 1000)
    # batch 1 (position 1): silver at +1.0 s, metrics at +1.2 s, sessions at +1.1 s
    _commit(silver, 1, ms + 1000, ("events-a", 1), {"event_date=2027-01-15/part-1.parquet": [T0 + 0.1, T0 + 0.5]})
    _commit(metrics, 1, ms + 1200, ("events-a", 1))
    _commit(sessions, 1, ms + 1100, ("events-a", 1))
    # batch 2: silver and metrics committed, sessions not yet
    _commit(silver, 2, ms + 3000, ("events-a", 2), {"event_date=2027-01-15/part-2.parquet": [T0 + 2.0]})
    _commit(metrics, 2, ms + 3100, ("events-a", 2))
    # a new instance claims metrics at the position it reached (2): an empty commit, much later
    _commit(metrics, 3, ms + 9000, ("events-a", 2))
    return silver, metrics, sessions


def test_an_event_waits_for_the_last_of_its_batchs_commits_in_silver_and_gold(tmp_path):
    silver, metrics, sessions = _lake(tmp_path)
    clock = LakeClock.of(str(silver), [str(metrics), str(sessions)]).refresh()
    times = clock.batch_times()
    assert times == {("events-a", 1): pytest.approx(T0 + 1.2)}  # batch 2 is not in sessions yet
    rows = clock.rows(T0, T0 + 10)
    assert len(rows) == 3
    found = sorted(zip(rows.timestamp.tolist(), latencies(rows, times).tolist(), strict=True))
    assert found[0] == (pytest.approx(T0 + 0.1), pytest.approx(1.1))
    assert found[1] == (pytest.approx(T0 + 0.5), pytest.approx(0.7))
    assert math.isnan(found[2][1])  # not committed in gold: no latency yet
    # sessions commits batch 2 later: its time is that commit's, not the metrics claim's (+9 s)
    _commit(sessions, 2, int(T0 * 1000) + 3500, ("events-a", 2))
    clock.refresh()
    late = clock.rows(T0 + 1.5, T0 + 10)
    assert latencies(late, clock.batch_times()).tolist() == [pytest.approx(1.5)]


def test_a_claim_never_moves_a_batchs_commit_time(tmp_path):
    _, metrics, _ = _lake(tmp_path)
    log = DeltaLog(metrics)
    log.refresh()
    assert log.first[("events-a", 2)].timestamp == pytest.approx(T0 + 3.1)
    assert [c.version for c in log.commits] == [0, 1, 2, 3]
    assert log.refresh() == []  # incremental: nothing new


def test_batch_times_need_every_table_and_are_kept_per_app_id(tmp_path):
    logs = []
    for name, ms in (("s", 100), ("m", 300), ("u", 200)):
        _commit(tmp_path / name, 0, ms, ("gen-1", 1))
        _commit(tmp_path / name, 1, ms + 1000, ("gen-2", 1))  # a new checkpoint starts its positions afresh
        logs.append(DeltaLog(tmp_path / name))
        logs[-1].refresh()
    times = batch_commit_times(logs[0], logs[1:])
    assert times == {("gen-1", 1): pytest.approx(0.3), ("gen-2", 1): pytest.approx(1.3)}


def test_rows_outside_the_window_are_left_out_and_batch_keys_come_in_order(tmp_path):
    silver, metrics, sessions = _lake(tmp_path)
    clock = LakeClock.of(str(silver), [str(metrics), str(sessions)]).refresh()
    assert len(clock.rows(T0 + 0.2, T0 + 0.6)) == 1
    assert clock.rows(T0 + 0.2, T0 + 3).batch_keys() == [("events-a", 1), ("events-a", 2)]
    empty = clock.rows(T0 + 100, T0 + 200)
    assert len(empty) == 0 and commit_times_of(empty, clock.batch_times()).size == 0


# -- percentiles -----------------------------------------------------------------------------
def test_percentiles_are_over_every_event_and_missing_ones_count_as_infinitely_late():
    values = np.arange(1, 101, dtype=float)  # 1..100 s
    figures = distribution(values)
    assert figures["p50_s"] == 50 and figures["p99_s"] == 99 and figures["max_s"] == 100
    assert figures["events"] == 100 and figures["missing"] == 0
    assert figures["cdf"][0] == [1.0, 0.0] and figures["cdf"][-1] == [100.0, 1.0]
    # 2 of 100 events expected never committed: p99 is not a number any more
    short = distribution(np.arange(1, 99, dtype=float), expected=100)
    assert short["missing"] == 2 and short["p99_s"] is None and short["p50_s"] == 50
    # NaN (found but its batch not in gold yet) is missing too
    assert distribution(np.array([1.0, np.nan]))["missing"] == 1
    assert distribution(np.array([]))["p50_s"] is None


def test_median_and_spread_of_repeated_timings():
    figures = median_and_spread([1.0, 3.0, 2.0, 10.0])
    assert figures["median_s"] == 2.5 and figures["min_s"] == 1.0 and figures["max_s"] == 10.0
    assert figures["n"] == 4 and median_and_spread([])["median_s"] is None


# -- the sustained-rate search ---------------------------------------------------------------
def _job(capacity: int, producer_limit: int = 10**9):
    """A fake: p99 small below its capacity, huge above; the producer tops out at producer_limit."""
    tried = []

    def try_rate(rate: int) -> dict:
        tried.append(rate)
        achieved = min(rate, producer_limit)
        return {"achieved_events_per_s": achieved - 10, "p99_s": 2.0 if achieved <= capacity else 40.0}

    return try_rate, tried


def test_the_search_stops_at_the_first_rate_that_fails():
    try_rate, tried = _job(capacity=55_000)
    found = search_sustained_rate([20_000, 35_000, 50_000, 70_000, 100_000], try_rate, log=lambda _: None)
    assert tried == [20_000, 35_000, 50_000, 70_000]
    assert found["max_sustained_events_per_s"] == 49_990  # the achieved rate of the last step that held
    assert [s["held"] for s in found["steps"]] == [True, True, True, False]


def test_a_rate_the_producer_could_not_offer_was_not_sustained():
    try_rate, tried = _job(capacity=10**9, producer_limit=40_000)
    found = search_sustained_rate([50_000, 20_000, 35_000], try_rate, log=lambda _: None)
    assert tried == [20_000, 35_000, 50_000]  # rising, whatever the order given
    assert found["max_sustained_events_per_s"] == 34_990
    assert "producer" in found["steps"][-1]["why_not"]


def test_no_rate_held_is_zero():
    try_rate, _ = _job(capacity=1_000)
    assert search_sustained_rate([20_000], try_rate, log=lambda _: None)["max_sustained_events_per_s"] == 0


def test_a_p99_of_exactly_the_limit_holds():
    found = search_sustained_rate([10], lambda r: {"achieved_events_per_s": 10, "p99_s": 10.0}, log=lambda _: None)
    assert found["steps"][0]["held"]


# -- the job's log lines ---------------------------------------------------------------------
JOB_LOG = "\n".join(
    [
        "[streaming] ready in 12.3 s (session and tables 9.1 s, fencing claims 0.4 s)",
        "[streaming] seed read into the engine state in 4.5 s",
        "[events] batch 0: 0 records -> quarantine 0, silver +0, duplicates 0, metrics 0 keys "
        "(0.21 s: read 0.20 commit 0.01)",
        "[events] batch 1: 1000 records -> quarantine 10, silver +960, duplicates 30, metrics 120 keys "
        "(0.84 s: read 0.51 commit 0.33)",
        "[events] 1,000 records committed, 81 records/s (t+12 s)",
        "[unguarded] batch 1: 500 records -> quarantine 5, silver +495 (0.40 s: read 0.30 commit 0.10)",
        "[events] batch 2: 2000 records -> quarantine 0, silver +2000, duplicates 0, metrics 9 keys "
        "(1.50 s: read 1.00 commit 0.40 postgres 0.10)",
    ]
)


def test_the_jobs_batch_lines_are_read_with_their_steps():
    found = batches(JOB_LOG)
    assert sorted(found) == [0, 1, 2]
    assert found[1] == {
        "batch": 1,
        "records": 1000,
        "silver": 960,
        "seconds": 0.84,
        "steps": {"read": 0.51, "commit": 0.33},
    }
    assert found[2]["steps"]["postgres"] == 0.10
    assert [b["batch"] for b in busy_batches(JOB_LOG)] == [1, 2]
    assert batches(JOB_LOG, "unguarded")[1]["records"] == 500
    assert batches(JOB_LOG, "unguarded")[1]["silver"] == 495
    assert batches("[raw_parse] batch 3: 7 records (0.10 s: trigger 0.10)", "raw_parse")[3]["silver"] is None
    assert seed_seconds(JOB_LOG) == 4.5 and ready_seconds(JOB_LOG) == 12.3
    assert seed_seconds("nothing") is None


# -- the command line ------------------------------------------------------------------------
def test_quick_tries_every_phase_with_tiny_sizes_and_unknown_phases_are_refused(capsys):
    assert QUICK.pipeline_events <= 100_000 and QUICK.latency_seconds <= 30 and len(QUICK.sustained_rates) >= 2
    assert main(["--phases", "ysb,nope"]) == 2
    assert "nope" in capsys.readouterr().err
    assert main(["--history-sizes", "1M"]) == 2
    assert PHASES.index("recovery") > PHASES.index("rebuild")  # the live phases come last


def test_committed_batches_follow_the_newest_id_when_spark_purged_old_commit_files(tmp_path):
    from lab.instances import committed_batches
    from tests.conftest import lake_settings

    settings = lake_settings(tmp_path)
    assert committed_batches(settings) == 0
    commits = Path(settings.checkpoint_path("events")) / "commits"
    commits.mkdir(parents=True)
    for batch in range(150, 250):  # Spark kept the newest 100
        (commits / str(batch)).write_text("v1\n{}\n")
    (commits / ".249.crc").write_text("")
    assert committed_batches(settings) == 250
    (commits / "250").write_text("v1\n{}\n")
    (commits / "150").unlink()
    assert committed_batches(settings) == 251
