"""The run's plots (matplotlib, Agg): throughput, latency CDF, fixed cost, rebuild log-log, history."""

from __future__ import annotations

from pathlib import Path


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path)
    _plt().close(fig)


def _finish(fig, ax, path: Path, title: str, ylabel: str, xlabel: str | None = None, **legend) -> None:
    """Labels, title, the legend (when `legend` gives its options) and the file."""
    if xlabel:
        ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if legend:
        ax.legend(**legend)
    _save(fig, path)


def plot_throughput(result: dict, path: Path) -> None:
    plt = _plt()
    m = result["metrics"]
    bars = [
        ("YSB: raw Spark\n(no table)", m.get("ysb_raw_spark_events_per_s"), "tab:gray"),
        ("YSB: platform\nexactly-once", m.get("ysb_exactly_once_events_per_s"), "tab:blue"),
        ("YSB: PyFlink\nexactly-once", m.get("ysb_pyflink_events_per_s"), "tab:purple"),
        ("pipeline: raw read\n+ reading, no-op", m.get("raw_parse_events_per_s"), "tab:gray"),
        ("pipeline:\nguarantees off", m.get("unguarded_events_per_s"), "tab:olive"),
        ("pipeline: off\n+ dedup shuffle", m.get("dedup_floor_events_per_s"), "tab:olive"),
        ("pipeline:\neffectively-once", m.get("pipeline_events_per_s"), "tab:blue"),
        ("cluster, 1 worker:\neffectively-once", m.get("cluster_workers_1_events_per_s"), "tab:cyan"),
        ("cluster, 2 workers:\neffectively-once", m.get("cluster_workers_2_events_per_s"), "tab:cyan"),
    ]
    fig, ax = plt.subplots(figsize=(15, 4.8), dpi=100)
    values = [b[1] or 0 for b in bars]
    ax.bar([b[0] for b in bars], values, color=[b[2] for b in bars])
    for i, v in enumerate(values):
        ax.text(i, v, f"{v:,.0f}", ha="center", va="bottom", fontsize=9)
    ax.axhline(60_000, color="tab:red", ls="--", lw=1, label="pipeline target 60k/s")
    ax.axhline(100_000, color="tab:red", ls=":", lw=1, label="pipeline moonshot 100k/s")
    if m.get("raw_parse_events_per_s"):
        ax.axhline(0.5 * m["raw_parse_events_per_s"], color="tab:orange", ls=":", lw=1, label="0.5 x raw read")
    _finish(
        fig, ax, path, "Throughput on this machine (one run, side by side)", "events / s", loc="upper left", fontsize=8
    )


def plot_latency(result: dict, path: Path) -> None:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8.5, 4.8), dpi=100)
    curves = [(result.get("latency") or {}, "tab:blue", 2.0)]
    steps = result.get("sustained", {}).get("steps", [])
    colors = plt.cm.viridis([i / max(1, len(steps)) for i in range(len(steps))])
    curves += [(step, color, 1.0) for step, color in zip(steps, colors, strict=True)]
    for run, color, width in curves:
        cdf = [(q, p) for q, p in run.get("cdf") or [] if q is not None]
        if cdf:
            rate = run.get("achieved_events_per_s") or run.get("rate") or 0
            label = f"{rate:,.0f} events/s, {run.get('seconds', 0):.0f} s (p99 {run.get('p99_s')} s)"
            ax.plot([max(q, 1e-3) for q, _ in cdf], [p for _, p in cdf], color=color, lw=width, label=label)
    for x, text in ((3.0, "p50 target 3 s"), (6.0, "p99 target 6 s"), (10.0, "sustained limit 10 s")):
        ax.axvline(x, color="tab:red", ls="--" if x < 10 else ":", lw=1, label=text)
    ax.axhline(0.99, color="tab:gray", ls=":", lw=1)
    ax.set_xscale("log")
    title = "Latency CDF: the latency run (thick), then the sustained-rate steps"
    xlabel = "seconds from produce to committed in gold (log scale)"
    _finish(fig, ax, path, title, "fraction of events", xlabel, loc="lower right", fontsize=7)


def plot_fixed_cost(result: dict, path: Path) -> None:
    plt = _plt()
    figures = result.get("fixed_cost") or {}
    bursts = figures.get("bursts", [])
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    xs = range(1, len(bursts) + 1)
    ax.bar(xs, [b["seconds"] for b in bursts], color="tab:blue", alpha=0.7, label="last produce -> committed in gold")
    for x, burst in zip(xs, bursts, strict=True):
        ys = burst.get("job_batch_seconds") or []
        ax.scatter(
            [x] * len(ys), ys, color="black", s=14, zorder=3, label="job's own batch seconds" if x == 1 else None
        )
    if figures.get("median_s") is not None:
        ax.axhline(figures["median_s"], color="tab:blue", ls=":", lw=1, label=f"median {figures['median_s']} s")
    ax.axhline(1.5, color="tab:red", ls="--", lw=1, label="target 1.5 s")
    ax.set_xticks(list(xs))
    title = "Fixed cost of a warm micro-batch, per burst"
    _finish(fig, ax, path, title, "seconds", "burst of 1,000 events", loc="upper right", fontsize=8)


def plot_rebuild(result: dict, path: Path) -> None:
    plt = _plt()
    points = [(p["events"], p["seconds"]) for p in result.get("rebuild", {}).get("sizes", [])]
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    if points:
        xs, ys = zip(*points, strict=True)
        ax.loglog(xs, ys, "o-", color="tab:blue", label="measured")
        ax.loglog(xs, [ys[0] * x / xs[0] for x in xs], ":", color="tab:gray", label="linear (exponent 1)")
        ax.loglog(xs, [x / 300_000 for x in xs], "--", color="tab:red", lw=1, label="target 300k events/s")
    title = f"Rebuild time against log size (exponent {result['metrics'].get('rebuild_scaling_exponent')})"
    _finish(fig, ax, path, title, "rebuild seconds", "events in the bronze log", loc="best")


def plot_history(result: dict, path: Path) -> None:
    plt = _plt()
    runs = result.get("history", {}).get("runs", [])
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    for i, run in enumerate(runs):
        seconds = run["batch_seconds"]
        ax.scatter([i] * len(seconds), seconds, color="tab:gray", s=14, zorder=2)
        ax.bar(i, run["median_batch_s"] or 0, color="tab:blue", alpha=0.6, zorder=1)
    ax.set_xticks(range(len(runs)), [f"history of\n{r['history_events']:,} events" for r in runs])
    title = f"Batch duration against history (ratio {result['metrics'].get('batch_duration_history_ratio')})"
    _finish(fig, ax, path, title, "job's micro-batch seconds (bar: median)")


PLOTTERS = {
    "throughput.png": plot_throughput,
    "latency_cdf.png": plot_latency,
    "fixed_cost.png": plot_fixed_cost,
    "rebuild_loglog.png": plot_rebuild,
    "history.png": plot_history,
}


def draw_all(result: dict, folder: Path) -> None:
    for name, plot in PLOTTERS.items():
        plot(result, folder / name)
