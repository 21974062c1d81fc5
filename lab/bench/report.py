"""bench.json, four plots and summary.md for one run; reports/bench/latest points at it."""

from __future__ import annotations

import json
import os
from pathlib import Path

# (metric, comparison, target, what it means); a target may name another metric.
TARGETS: list[tuple[str, str, object, str]] = [
    ("guarantee_overhead_ratio", ">=", 0.90, "throughput with guarantees / without"),
    ("ysb_exactly_once_events_per_s", ">=", "ysb_pyflink_events_per_s", "YSB exactly-once vs PyFlink"),
    ("ysb_exactly_once_events_per_s", ">=", ("ysb_raw_spark_events_per_s", 0.8), "YSB exactly-once vs 0.8 x raw"),
    ("pipeline_events_per_s", ">=", 250_000, "pipeline events/s on 2 cores"),
    ("latency_p99_s", "<=", 2.0, "p99 produce -> gold at the offered rate"),
    ("recovery_first_batch_s", "<=", 15, "SIGKILL -> first committed batch, warm standby"),
    ("recovery_cold_first_batch_s", "<=", 15, "SIGKILL -> first committed batch, cold restart"),
    ("rebuild_events_per_s", ">=", 1_000_000, "rebuild from bronze, largest size"),
    ("rebuild_scaling_exponent", "<=", 1.05, "time ~ size^k"),
    ("batch_duration_history_ratio", "<=", 1.5, "micro-batch, long / short history"),
]

REQUIRED_METRICS = (
    "pipeline_events_per_s",
    "ysb_exactly_once_events_per_s",
    "ysb_raw_spark_events_per_s",
    "ysb_pyflink_events_per_s",
    "guarantee_overhead_ratio",
    "latency_p50_s",
    "latency_p99_s",
    "offered_events_per_s",
    "recovery_first_batch_s",
    "recovery_caught_up_s",
    "recovery_cold_first_batch_s",
    "recovery_cold_caught_up_s",
    "latency_sustained_p50_s",
    "latency_sustained_p99_s",
    "sustained_events_per_s",
    "rebuild_events_per_s",
    "rebuild_scaling_exponent",
    "batch_duration_history_ratio",
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


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_throughput(result: dict, path: Path) -> None:
    plt = _plt()
    m = result["metrics"]
    bars = [
        ("YSB: raw Spark\n(no-op sink)", m.get("ysb_raw_spark_events_per_s"), "tab:gray"),
        ("YSB: platform\nexactly-once", m.get("ysb_exactly_once_events_per_s"), "tab:blue"),
        ("YSB: PyFlink\nexactly-once", m.get("ysb_pyflink_events_per_s"), "tab:purple"),
        ("pipeline:\nguarantees off", result.get("pipeline", {}).get("unguarded", {}).get("events_per_s"), "tab:gray"),
        ("pipeline:\neffectively-once", m.get("pipeline_events_per_s"), "tab:blue"),
    ]
    fig, ax = plt.subplots(figsize=(10, 4.5), dpi=100)
    labels = [b[0] for b in bars]
    values = [b[1] or 0 for b in bars]
    ax.bar(labels, values, color=[b[2] for b in bars])
    for i, v in enumerate(values):
        ax.text(i, v, f"{v:,.0f}", ha="center", va="bottom", fontsize=9)
    ax.axhline(250_000, color="tab:red", ls="--", lw=1, label="pipeline target 250k/s")
    ax.set_ylabel("events / s")
    ax.set_title("Throughput on this machine (one run, side by side)")
    ax.legend(loc="upper right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_latency(result: dict, path: Path) -> None:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    for key, color in (("latency", "tab:blue"), ("latency_sustained", "tab:green")):
        run = result.get(key) or {}
        cdf = run.get("cdf") or []
        if cdf:
            label = f"{run.get('offered_events_per_s') or 0:,.0f} events/s offered (p99 {run.get('p99_s')} s)"
            ax.plot([q for q, _ in cdf], [p for _, p in cdf], color=color, lw=1.5, label=label)
    ax.axvline(2.0, color="tab:red", ls="--", lw=1, label="p99 target 2 s")
    ax.axhline(0.99, color="tab:gray", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("seconds from produce to visible in gold (log scale)")
    ax.set_ylabel("fraction of events")
    ax.set_title("Latency CDF: at the target rate, and at a rate the job keeps up with")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_rebuild(result: dict, path: Path) -> None:
    plt = _plt()
    points = [(p["events"], p["seconds"]) for p in result.get("rebuild", {}).get("sizes", [])]
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    if points:
        xs, ys = zip(*points, strict=True)
        ax.loglog(xs, ys, "o-", color="tab:blue", label="measured")
        ax.loglog(xs, [ys[0] * x / xs[0] for x in xs], ":", color="tab:gray", label="linear (exponent 1)")
        ax.loglog(xs, [x / 1_000_000 for x in xs], "--", color="tab:red", lw=1, label="target 1M events/s")
    ax.set_xlabel("events in the bronze log")
    ax.set_ylabel("rebuild seconds")
    ax.set_title(f"Rebuild time against log size (exponent {result['metrics'].get('rebuild_scaling_exponent')})")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_history(result: dict, path: Path) -> None:
    plt = _plt()
    runs = result.get("history", {}).get("runs", [])
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    for i, run in enumerate(runs):
        seconds = run["batch_seconds"]
        ax.scatter([i] * len(seconds), seconds, color="tab:gray", s=14, zorder=2)
        ax.bar(i, run["median_batch_s"] or 0, color="tab:blue", alpha=0.6, zorder=1)
    ax.set_xticks(range(len(runs)), [f"silver holds\n{r['history_events']:,} events" for r in runs])
    ax.set_ylabel("refine micro-batch seconds (bar: median)")
    ax.set_title(f"Batch duration against history (ratio {result['metrics'].get('batch_duration_history_ratio')})")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _fmt(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float) and value < 100:
        return f"{value:.3g}"
    return f"{value:,.0f}" if isinstance(value, int | float) else str(value)


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
    others = ("latency_p50_s", "offered_events_per_s", "latency_sustained_p50_s", "latency_sustained_p99_s")
    others += ("sustained_events_per_s", "recovery_caught_up_s", "recovery_cold_caught_up_s")
    for key in (*others, "ysb_raw_spark_events_per_s"):
        lines.append(f"| {key} | {_fmt(m.get(key))} |")
    ysb = result.get("ysb", {}).get("agreement")
    if ysb:
        agree = f"{ysb['agree']} ({ysb['windows']:,} windows, {ysb['views']:,} views)"
        lines.append(f"| YSB counts agree across the systems | {agree} |")
    if result.get("errors"):
        lines += ["", "## Errors", *[f"- {phase}: {text}" for phase, text in result["errors"].items()]]
    lines += ["", "Plots: throughput.png, latency_cdf.png, rebuild_loglog.png, history.png."]
    return "\n".join(lines) + "\n"


def write_report(result: dict, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    result["targets"] = target_rows(result["metrics"])
    (folder / "bench.json").write_text(json.dumps(result, indent=2, default=str))
    for name, plot in (
        ("throughput.png", plot_throughput),
        ("latency_cdf.png", plot_latency),
        ("rebuild_loglog.png", plot_rebuild),
        ("history.png", plot_history),
    ):
        plot(result, folder / name)
    (folder / "summary.md").write_text(summary_markdown(result))
    latest = folder.parent / "latest"
    if latest.is_symlink() or latest.exists():
        latest.unlink()
    os.symlink(folder.name, latest)
    return folder
