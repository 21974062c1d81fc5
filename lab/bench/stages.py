"""Where a catch-up job's micro-batches spend their task time, stage by stage, from Spark's event log.

The pipeline phase runs each catch-up job with an event log (`event_log_conf`); `split` reads it
back: for every micro-batch's job (Spark tags those with `streaming.sql.batchId`), each stage's
tasks, task seconds (what a core was busy with, the Python workers of `mapInArrow` included),
the JVM's own CPU seconds and GC, and the rows and bytes it read and wrote. Stages are named by
what their tasks read: Kafka (`input`), a shuffle, or both (a union of legs).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

BATCH_PROPERTY = "streaming.sql.batchId"


def event_log_conf(folder: Path) -> dict[str, str]:
    """spark-submit conf for one plain JSON event log per job in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    return {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": folder.resolve().as_uri(),
        "spark.eventLog.compress": "false",
        "spark.eventLog.rolling.enabled": "false",
    }


def _events(folder: Path):
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        with open(path, encoding="utf-8") as lines:
            for line in lines:
                yield json.loads(line)


def _stage_of(tasks: list[dict]) -> dict:
    total = defaultdict(float)
    for metrics in tasks:
        shuffle_read, shuffle_write = metrics["Shuffle Read Metrics"], metrics["Shuffle Write Metrics"]
        total["task_s"] += metrics["Executor Run Time"] / 1e3
        total["jvm_cpu_s"] += metrics["Executor CPU Time"] / 1e9
        total["gc_s"] += metrics["JVM GC Time"] / 1e3
        total["input_records"] += metrics["Input Metrics"]["Records Read"]
        total["shuffle_read_records"] += shuffle_read["Total Records Read"]
        total["shuffle_written_records"] += shuffle_write["Shuffle Records Written"]
        total["shuffle_written_mb"] += shuffle_write["Shuffle Bytes Written"] / 1e6
        total["result_mb"] += metrics["Result Size"] / 1e6
    reads = [what for what, key in (("Kafka", "input_records"), ("shuffle", "shuffle_read_records")) if total[key]]
    rounded = {key: round(value, 2) if key.endswith(("_s", "_mb")) else int(value) for key, value in total.items()}
    return {"reads": " + ".join(reads) or "nothing", "tasks": len(tasks), **rounded}


def split(folder: Path) -> list[dict]:
    """Per micro-batch (in batch order): its stages, in the order Spark ran them."""
    batch_of_stage: dict[int, int] = {}
    tasks: dict[int, list[dict]] = defaultdict(list)
    wall: dict[int, float] = {}
    for event in _events(folder):
        kind = event["Event"]
        if kind == "SparkListenerJobStart" and BATCH_PROPERTY in event.get("Properties", {}):
            for stage in event["Stage IDs"]:
                batch_of_stage[stage] = int(event["Properties"][BATCH_PROPERTY])
        elif kind == "SparkListenerTaskEnd" and event.get("Task Metrics"):
            tasks[event["Stage ID"]].append(event["Task Metrics"])
        elif kind == "SparkListenerStageCompleted":
            info = event["Stage Info"]
            wall[info["Stage ID"]] = (info.get("Completion Time", 0) - info.get("Submission Time", 0)) / 1e3
    batches: dict[int, list[dict]] = defaultdict(list)
    for stage in sorted(batch_of_stage):
        if tasks.get(stage):  # a stage with no task was skipped (its shuffle already written)
            figures = {"stage": stage, "wall_s": round(wall.get(stage, 0.0), 2), **_stage_of(tasks[stage])}
            batches[batch_of_stage[stage]].append(figures)
    return [{"batch": batch, "stages": stages} for batch, stages in sorted(batches.items())]


def split_lines(runs: dict[str, dict]) -> list[str]:
    """Markdown: every stage of every micro-batch of each catch-up job."""
    rows = [
        f"| {mode} | {batch['batch']} | {n} | {s['reads']} | {s['tasks']} | {s['wall_s']:.2f} | {s['task_s']:.2f} | "
        f"{s['jvm_cpu_s']:.2f} | {s['shuffle_written_mb']:.1f} | {s['result_mb']:.1f} |"
        for mode, run in runs.items()
        for batch in run.get("stages", [])
        for n, s in enumerate(batch["stages"], start=1)
    ]
    if not rows:
        return []
    return [
        "",
        "## Per stage (throughput runs, from Spark's event logs)",
        "",
        "Task seconds: what the stage's tasks kept a core busy (their Python workers included); JVM CPU: the "
        "JVM threads' own share. On 2 cores a stage's wall time is about half its task seconds.",
        "",
        "| job | batch | stage | reads | tasks | wall s | task s | JVM CPU s | shuffle written MB | results MB |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
    ]
