"""bench.json, the plots and summary.md for one run; reports/bench/latest points at it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from lab.bench.plots import PLOTTERS, draw_all
from lab.bench.stages import split_lines

# (metric, comparison, target, what it means); a target may name another metric, or (metric, factor).
TARGETS: list[tuple[str, str, object, str]] = [
    ("fixed_cost_1k_s", "<=", 1.5, "warm micro-batch of 1,000 events, Kafka to gold committed (median)"),
    ("pipeline_events_per_s", ">=", 60_000, "pipeline events/s, Kafka to gold, all guarantees (issue 26)"),
    ("pipeline_events_per_s", ">=", 100_000, "the same, moonshot (issue 26)"),
    ("pipeline_events_per_s", ">=", ("raw_parse_events_per_s", 0.5), "pipeline vs raw Spark read + strict reading"),
    ("latency_p50_s", "<=", 3.0, "p50 produce -> committed in gold at 10k events/s"),
    ("latency_p99_s", "<=", 6.0, "p99 produce -> committed in gold at 10k events/s"),
    ("max_sustained_events_per_s", ">=", 50_000, "highest offered rate with p99 <= 10 s"),
    ("guarantee_overhead_ratio", ">=", 0.7, "pipeline events/s with guarantees / without (issue 26)"),
    ("guarantee_overhead_ratio", ">=", 0.85, "the same, moonshot (issue 26)"),
    ("driver_bytes_per_input_byte", "<=", 0.01, "bytes into the guarded job's driver per Kafka byte read"),
    ("rebuild_events_per_s", ">=", 300_000, "batch rebuild from bronze, largest size"),
    ("rebuild_scaling_exponent", "<=", 1.05, "rebuild time ~ size^k"),
    ("recovery_standby_first_batch_s", "<=", 5, "SIGKILL -> first committed batch, warm standby"),
    ("recovery_cold_first_batch_s", "<=", 20, "SIGKILL -> first committed batch, cold restart"),
    ("ysb_exactly_once_events_per_s", ">=", "ysb_pyflink_events_per_s", "YSB exactly-once vs PyFlink"),
    ("ysb_exactly_once_events_per_s", ">=", ("ysb_raw_spark_events_per_s", 0.8), "YSB exactly-once vs 0.8 x raw"),
    ("batch_duration_history_ratio", "<=", 1.5, "micro-batch seconds, long / short history"),
]

# Figures reported beside the targets (each one must be measured by a full run).
OTHER_METRICS = (
    "fixed_cost_1k_p90_s",
    "fixed_cost_job_batch_s",
    "raw_parse_events_per_s",
    "unguarded_events_per_s",
    # the unguarded job plus a shuffle by event id into Spark's own dropDuplicates, and its share of
    # the unguarded one: the most guarantee_overhead_ratio can be for a plan on Spark's state
    "dedup_floor_events_per_s",
    "dedup_floor_ratio",
    "latency_offered_events_per_s",
    "latency_max_s",
    "recovery_standby_caught_up_s",
    "recovery_cold_caught_up_s",
    "ysb_raw_spark_events_per_s",
    "ysb_pyflink_events_per_s",
    "explain_seconds",  # batch/explain.py on one gold row of the largest rebuilt lake (the slower table's)
    "cluster_workers_1_events_per_s",  # the guarded catch-up on a standalone cluster of one 1-core worker
    "cluster_workers_2_events_per_s",  # ... of two
    "cluster_tables_equal",  # a boolean: every table of both cluster runs == the local run's
    # user_sessions files the guarded job's driver read to write them again without the replaced
    # sessions, per Kafka byte: from the lake, not from the tasks (not in driver_bytes_per_input_byte)
    "driver_rewrite_bytes_per_input_byte",
)

REQUIRED_METRICS = tuple(dict.fromkeys([name for name, *_ in TARGETS] + list(OTHER_METRICS)))

PLOTS = tuple(PLOTTERS)

# How each figure is measured, for the summary (lab/bench/*.py say it at length).
METHODS = (
    "**Fixed cost**: the job running and idle; bursts of exactly 1,000 valid events sent as fast as the "
    "client goes, all acknowledged; per burst, (commit time in gold of the batch holding its last event) - "
    "(Kafka timestamp of its last record); median of the bursts, spread and the job's own batch seconds beside.",
    "**Throughput**: four spark-submit jobs catch up on one pre-loaded topic with the same batch size "
    "(availableNow): the streaming job, the same read and reading without guarantees (lab/bench/unguarded.py), "
    "that job with only a shuffle by event id into Spark's own dropDuplicates added (`--dedup-floor`: the least a "
    "guarded plan on Spark's state pays), and the same read and reading into the no-op sink "
    "(lab/bench/raw_parse.py). Seconds from when each job's session and tables are ready to caught up. "
    "The streaming job and the unguarded one then run again, alternated, as many pairs as `--pipeline-pairs`: "
    "their figures are all their events over all their seconds, and the ratio is theirs.",
    "**Latency**: per event, (commit time in gold of the micro-batch that committed it) - (its Kafka timestamp); "
    "commit times from the Delta logs' commitInfo (timestamp, custom_metadata position) of silver, metrics and "
    "sessions, the latest of the three; every silver row of the run (not committed = infinitely late).",
    "**Sustained rate**: rising offered rates, each for a fixed time on the same running job, drained after "
    "each; the highest rate the producer really offered with p99 <= 10 s; stops at the first that fails.",
    "**Recovery**: SIGKILL under load; first committed batch from the `events` checkpoint's commits/; caught up "
    "= everything produced before the kill committed. The warm standby has waited 75 s before the kill (longer "
    "than the minute after which Spark ends idle Python workers).",
    "**Explain**: after the largest rebuild, `python -m batch.explain` on one row picked at random of each gold "
    "table (the rebuild's), through delta-rs; the slower table's seconds, and it must add up.",
    "**Cluster**: the guarded catch-up again, on a Spark standalone cluster on this machine (master and 1, then 2 "
    "workers of one core, one executor each; the driver outside them) on the same topic and batch size, each on a "
    "fresh lake; every table (bronze, quarantine, silver, both gold) compared with the local run's, ignoring order.",
    "**History**: silver, gold and the engine state (through the seed, as after a reset) prefilled with a short "
    "or a long history; the same new events streamed; median of the job's own batch seconds, long / short.",
)


def target_rows(metrics: dict) -> list[dict]:
    rows = []
    for name, op, target, meaning in TARGETS:
        if isinstance(target, str):
            goal, label = metrics.get(target), target
        elif isinstance(target, tuple):
            other = metrics.get(target[0])
            goal, label = (None if other is None else other * target[1]), f"{target[1]} x {target[0]}"
        else:
            goal, label = target, f"{target:,}"
        value = metrics.get(name)
        met = None if value is None or goal is None else (value >= goal if op == ">=" else value <= goal)
        rows.append({"metric": name, "target": f"{op} {label}", "goal": goal, "value": value, "met": met})
        rows[-1]["meaning"] = meaning
    return rows


def _fmt(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value < 100:
        return f"{value:.3g}"
    return f"{value:,.0f}" if isinstance(value, int | float) else str(value)


def _sustained_lines(result: dict) -> list[str]:
    steps = result.get("sustained", {}).get("steps", [])
    if not steps:
        return []
    lines = ["", "| offered rate | achieved | p50 s | p99 s | drain s | held |", "|---|---|---|---|---|---|"]
    for s in steps:
        held = "yes" if s.get("held") else f"no: {s.get('why_not')}"
        lines.append(
            f"| {s['rate']:,}/s | {_fmt(s.get('achieved_events_per_s'))}/s | {_fmt(s.get('p50_s'))} | "
            f"{_fmt(s.get('p99_s'))} | {_fmt(s.get('drain_seconds'))} | {held} |"
        )
    return lines


def _state_cell(state: dict | None) -> str:
    if not state:
        return "—"
    spent = state["lookup_s"] + state["write_s"] + state["commit_s"]
    return f"{state['written']:,} keys, {spent:.2f} s"


def _profile_lines(result: dict) -> list[str]:
    """Where each batch of the guarded catch-up went: the job's own steps and the engine's figures."""
    run = result.get("pipeline", {}).get("guarded", {})
    engine = {e["batch"]: e for e in run.get("engine", [])}
    if not engine:
        return []
    lines = [
        "",
        "## Profile of a micro-batch (throughput run, all guarantees)",
        "",
        "The job's own seconds per batch (read: the Spark job with the engine's state and the tasks' "
        "writes; commit: the five delta-rs commits), the engine's work around it, and the state's "
        "RocksDB lookups + writes + commit in task seconds (summed over its partitions).",
        "",
        "| batch | records | job s (read + commit) | around it s | state (event ids) |",
        "|---|---|---|---|---|",
    ]
    for line in run.get("batch_lines", []):
        e = engine.get(line["batch"])
        if e is None:
            continue
        steps = " + ".join(f"{v:.2f}" for v in line["steps"].values())
        states = {s["state"]: s for s in e["states"]}
        lines.append(
            f"| {line['batch']} | {line['records']:,} | {line['seconds']:.2f} ({steps}) | "
            f"{sum(e['around_s'].values()):.2f} | {_state_cell(states.get(1))} |"
        )
    return lines


def summary_markdown(result: dict) -> str:
    m = result["metrics"]
    lines = [
        f"# Benchmark {result['run_id']}",
        "",
        f"{result['machine']['cores']} cores, {result['machine']['memory_gb']} GB; profile `{result['profile']}`; "
        f"{result['seconds']:.0f} s in all. Versions: " + ", ".join(f"{k} {v}" for k, v in result["versions"].items()),
        "",
        "| metric | target | measured | met |",
        "|---|---|---|---|",
    ]
    for row in target_rows(m):
        met = {True: "yes", False: "**no**", None: "n/a"}[row["met"]]
        lines.append(f"| {row['metric']} ({row['meaning']}) | {row['target']} | {_fmt(row['value'])} | {met} |")
    lines += ["", "| other figure | value |", "|---|---|"]
    lines += [f"| {key} | {_fmt(m.get(key))} |" for key in OTHER_METRICS]
    ysb = result.get("ysb", {}).get("agreement")
    if ysb:
        agree = f"{ysb['agree']} ({ysb['windows']:,} windows, {ysb['views']:,} views)"
        lines.append(f"| YSB counts agree across the systems | {agree} |")
    if short := result.get("ysb", {}).get("pyflink_first_run_short"):
        first = f"{short['pyflink']:,} of {short['spark']:,} views, {short['uncommitted_rows']:,} rows uncommitted"
        lines.append(f"| PyFlink's first run was short, so it ran twice | {first} |")
    for n, pair in enumerate(result.get("pipeline_pairs", []), 1):
        lines.append(f"| pipeline pair {n}: guarded / unguarded, ratio | {pair['guarded']:,} / {pair['unguarded']:,}, "
                     f"{pair['ratio']} |")  # fmt: skip
    lines += _sustained_lines(result)
    lines += _profile_lines(result)
    lines += split_lines(result.get("pipeline", {}))
    lines += ["", "## How it is measured", "", *[f"- {text}" for text in METHODS]]
    if result.get("errors"):
        lines += ["", "## Errors", *[f"- {phase}: {text}" for phase, text in result["errors"].items()]]
    lines += ["", f"Plots: {', '.join(PLOTS)}."]
    return "\n".join(lines) + "\n"


def _plain(value):
    """numpy scalars as Python numbers; anything else JSON does not know as text."""
    return value.item() if hasattr(value, "item") else str(value)


def write_report(result: dict, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    result["targets"] = target_rows(result["metrics"])
    (folder / "bench.json").write_text(json.dumps(result, indent=2, default=_plain))
    draw_all(result, folder)
    (folder / "summary.md").write_text(summary_markdown(result))
    latest = folder.parent / "latest"
    if latest.is_symlink() or latest.exists():
        latest.unlink()
    os.symlink(folder.name, latest)
    return folder
