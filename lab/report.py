"""The lab's report: report.json per guarantee, report.html with the timeline and the table of
guarantees against what they lost or repeated (the seeds' comparison, measured)."""

from __future__ import annotations

import base64
import html
import io
import json
from pathlib import Path

from lab.timeline import Timeline

MARKERS = {
    "kill": ("SIGKILL driver", "tab:red", "v"),
    "hook": ("SIGKILL at a commit point", "tab:purple", "v"),
    "broker_kill": ("SIGKILL broker", "black", "X"),
    "broker_start": ("broker back", "tab:gray", "^"),
    "zombie_pause": ("zombie paused", "tab:orange", "s"),
    "zombie_fenced": ("zombie refused", "tab:green", "D"),
    "start": ("driver (re)start", "tab:blue", "|"),
}


def timeline_png(timeline: Timeline) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(12, 4.5), dpi=100)
    points = [(t, lag) for t, lag in timeline.lag if lag is not None]
    if points:
        ax.plot([t for t, _ in points], [lag for _, lag in points], color="tab:blue", lw=1.2, label="consumer lag")
    top = max((lag for _, lag in points), default=1) or 1
    for kind, (label, color, marker) in MARKERS.items():
        times = [e["t"] for e in timeline.events if e["kind"] == kind]
        if times:
            ax.scatter(times, [top * 1.05] * len(times), color=color, marker=marker, s=45, label=label, zorder=3)
    ax.set_xlabel("seconds since the lab started")
    ax.set_ylabel("Kafka records not yet in bronze")
    ax.set_title("Faults, restarts and consumer lag")
    # Below the axes: inside, the legend hid the fault markers along the top.
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize=8, ncol=7, frameon=False)
    ax.grid(alpha=0.3)
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()


COLUMNS = (
    ("lost", "lost (Delta)"),
    ("duplicated", "duplicated (Delta)"),
    ("postgres_lost", "lost in PostgreSQL"),
    ("postgres_duplicated", "duplicated in PostgreSQL"),
    ("gold_mismatched_rows", "gold rows ≠ batch"),
    ("zombie_commits_refused", "zombie commits refused"),
    ("passed", "as promised"),
)


def table_text(report: dict) -> str:
    head = f"{'guarantee':<15}" + "".join(f"{title[:22]:>24}" for _, title in COLUMNS)
    lines = [head, "-" * len(head)]
    for guarantee, row in report["guarantees"].items():
        lines.append(f"{guarantee:<15}" + "".join(f"{row[key]!s:>24}" for key, _ in COLUMNS))
    return "\n".join(lines + operator_lines(report))


def operator_lines(report: dict) -> list[str]:
    """The operator phase (lab/operator_faults.py), a line per fault: its verdict, what it said."""
    phase = report.get("operator_faults")
    if not phase:
        return []
    verdict = "passed" if phase["passed"] else "FAILED"
    lines = ["", f"operator faults: {verdict} (rebuilt and verified: {phase['verified']})"]
    for step in phase["steps"]:
        counted = {k: step["checks"][k] for k in ("lost", "duplicated", "gold_events_off_by") if k in step["checks"]}
        lines.append(f"  {'ok ' if step['passed'] else 'BAD'} {step['name']:<32} {counted} {step['note']}".rstrip())
        if step["said"]:
            lines.append(f"      said: {step['said'][:200]}")
    return lines


def write(folder: Path, report: dict, timeline: Timeline) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.json").write_text(json.dumps(report, indent=2, default=str))
    (folder / "timeline.json").write_text(json.dumps({"events": timeline.events, "lag": timeline.lag}))
    png = timeline_png(timeline)
    (folder / "timeline.png").write_bytes(png)
    rows = "".join(
        "<tr><td>{}</td>{}</tr>".format(
            html.escape(g), "".join(f"<td>{html.escape(str(r[k]))}</td>" for k, _ in COLUMNS)
        )
        for g, r in report["guarantees"].items()
    )
    head = "".join(f"<th>{html.escape(t)}</th>" for _, t in COLUMNS)
    any_row = next(iter(report["guarantees"].values()))
    faults = html.escape(json.dumps(any_row["faults"]))
    recovery = any_row["recovery_seconds"]
    (folder / "report.html").write_text(f"""<!doctype html><html><head><meta charset="utf-8">
<title>Fault lab {html.escape(report["run_id"])}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:1200px}} table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 10px;text-align:right}} td:first-child{{text-align:left}}
.ok{{color:#080}} .bad{{color:#c00}}</style></head><body>
<h1>Fault lab: {html.escape(report["run_id"])} <span class="{"ok" if report["passed"] else "bad"}">
{"PASSED" if report["passed"] else "FAILED"}</span></h1>
<p>Seed {report["seed"]}. {report["events_acked"]} events acknowledged by the broker, the same fault schedule
for every guarantee: {faults}. Recovery from restart to the first committed batch: p50 {recovery["p50"]} s,
max {recovery["max"]} s.</p>
<h2>Delivery guarantees against what they lost or repeated</h2>
<table><tr><th>guarantee</th>{head}</tr>{rows}</table>
<p>exactly-once: increments, progress row and epoch check in one PostgreSQL transaction.
at-least-once: increments only, replayed after a crash. at-most-once: progress committed before the
increments, so a crash in between loses the batch.</p>
{_operator_html(report)}
<h2>Timeline</h2><img src="data:image/png;base64,{base64.b64encode(png).decode()}" alt="timeline">
<p>Verification of the Delta tables: <code>{html.escape(str(report.get("verdict", "")))}</code></p>
</body></html>""")
    return folder / "report.html"


def _operator_html(report: dict) -> str:
    phase = report.get("operator_faults")
    if not phase:
        return ""
    rows = "".join(
        f'<tr><td>{html.escape(step["name"])}</td><td class="{"ok" if step["passed"] else "bad"}">'
        f"{'passed' if step['passed'] else 'FAILED'}</td><td>{html.escape(step['said'] or step['note'] or '')}</td>"
        f"<td>{html.escape(json.dumps(step['checks']))}</td></tr>"
        for step in phase["steps"]
    )
    return (
        "<h2>Operator faults: each met with the command its one line names</h2><table><tr><th>fault</th>"
        f"<th>verdict</th><th>the one line</th><th>checks</th></tr>{rows}</table>"
    )


def point_latest(root: Path, folder: Path) -> None:
    latest = root / "latest"
    if latest.is_symlink() or latest.exists():
        latest.unlink()
    latest.symlink_to(folder.name)


def promised(guarantee: str, row: dict, verified: bool, zombies: int) -> bool:
    """Whether a guarantee's row of the report kept its promise: the pipeline exact and the zombie
    fenced always; the sink exact (exactly-once), losing nothing (at-least-once) or doubling
    nothing (at-most-once)."""
    pipeline_exact = verified and row["lost"] == 0 and row["duplicated"] == 0
    fenced = row["zombie_commits_refused"] == zombies and row["zombie_rows_after_resume"] == 0
    if guarantee == "exactly-once":
        sink_exact = row["postgres_lost"] == row["postgres_duplicated"] == row["gold_mismatched_rows"] == 0
        return pipeline_exact and fenced and sink_exact
    if guarantee == "at-least-once":
        return pipeline_exact and fenced and row["postgres_lost"] == 0
    return pipeline_exact and fenced and row["postgres_duplicated"] == 0
