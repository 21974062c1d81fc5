"""Throughput of the pipeline: four spark-submit jobs catch up on the same pre-loaded topic.

- guarded: the streaming job itself (`jobs/stream.py run --until-caught-up`), all guarantees;
- unguarded: the same read and reading without the guarantees (lab/bench/unguarded.py);
- dedup_floor: the unguarded job plus the shuffle by event id into Spark's own deduplication, the
  least any guarded plan on Spark's state pays (lab/bench/unguarded.py `--dedup-floor`);
- raw_parse: the same read and reading into Spark's no-op sink (lab/bench/raw_parse.py).

Each starts on a fresh lake and checkpoint, reads the topic from its start with the same
micro-batch size (availableNow) and writes `<reports_root>/streaming/last-catch-up.json`
{seconds, records}: seconds from when its session and tables are ready (JVM and Spark start-up
are not in them) to caught up. Also here: is the running job caught up (checkpoint vs Kafka)?
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

from eo.runtime.config import Settings
from eo.runtime.kafka_admin import end_offsets
from eo.runtime.monitoring import kafka_offsets, read_checkpoint
from lab.bench import job_log, stages
from lab.bench.spark_submit import Submitter

# mode -> (script, its arguments before the batch size, the query name in its log lines)
CATCH_UP_JOBS = {
    "guarded": ("jobs/stream.py", ["run", "--until-caught-up"], "events"),
    "unguarded": ("lab/bench/unguarded.py", [], "unguarded"),
    "dedup_floor": ("lab/bench/unguarded.py", ["--dedup-floor"], "dedup_floor"),
    "raw_parse": ("lab/bench/raw_parse.py", [], "raw_parse"),
}
CATCH_UP_FILE = ("streaming", "last-catch-up.json")


def catch_up(submitter: Submitter, settings: Settings, mode: str, max_offsets: int, log: Path) -> dict:
    """Run one of CATCH_UP_JOBS until caught up on the topic; its figures."""
    script, args, query = CATCH_UP_JOBS[mode]
    event_log = log.with_suffix(".events")
    submitter = replace(submitter, conf={**submitter.conf, **stages.event_log_conf(event_log)})
    began = time.monotonic()
    submitter.run(script, [*args, "--max-offsets-per-trigger", str(max_offsets)], settings, log)
    stats = json.loads(Path(settings.reports_root, *CATCH_UP_FILE).read_text())
    batches = job_log.busy_batches(log.read_text(errors="replace"), query)
    seconds, events = stats["seconds"], stats["records"]
    return {
        "mode": mode,
        "events": events,
        "seconds": seconds,
        "events_per_s": round(events / seconds) if seconds else None,
        "wall_seconds": round(time.monotonic() - began, 1),
        "batches": len(batches),
        "batch_lines": batches,  # the job's own lines: seconds and steps per batch
        "driver_bytes": stats.get("driver_bytes", {}),  # the streaming job's only (streaming/query.py)
        "driver_parts": stats.get("driver_parts", {}),  # what the collected bytes were made of
        "driver_rewrites": stats.get("driver_rewrites", {}),  # files the driver read to remove sessions
        "engine": stats.get("engine", []),  # Spark's figures per batch (streaming/engine_report.py); the job's only
        "stages": stages.split(event_log),  # task time per stage of each micro-batch (Spark's event log)
        "log": str(log),
    }


PAIRED = ("guarded", "unguarded")  # the jobs whose ratio is the guarantee's price, run in pairs


def pooled(runs: list[dict]) -> int | None:
    """Events per second over several catch-ups of one job: all their events over all their seconds."""
    seconds = sum(run["seconds"] for run in runs)
    return round(sum(run["events"] for run in runs) / seconds) if seconds else None


def pairs(runs: dict[str, list[dict]]) -> list[dict]:
    """Each pair of guarded and unguarded runs, in the order they ran, with its own ratio."""
    out = []
    for guarded, unguarded in zip(runs["guarded"], runs["unguarded"], strict=True):
        ratio = round(guarded["events_per_s"] / unguarded["events_per_s"], 3) if unguarded["events_per_s"] else None
        out.append({"guarded": guarded["events_per_s"], "unguarded": unguarded["events_per_s"], "ratio": ratio})
    return out


def figures(runs: dict[str, dict], paired: dict[str, list[dict]], input_bytes: int) -> dict:
    """The phase's metrics: the guarded and unguarded jobs' pooled over their pairs (`paired`),
    the others' from their one run (`runs`), and what reached the guarded driver per Kafka byte."""
    guarded, unguarded = pooled(paired["guarded"]), pooled(paired["unguarded"])
    floor = runs["dedup_floor"]["events_per_s"]
    first = runs["guarded"]
    rewritten = first.get("driver_rewrites", {}).get("bytes_read", 0)
    return {
        "pipeline_events_per_s": guarded,
        "unguarded_events_per_s": unguarded,
        "raw_parse_events_per_s": runs["raw_parse"]["events_per_s"],
        "guarantee_overhead_ratio": round(guarded / unguarded, 3),
        # About the most guarantee_overhead_ratio can be for a plan on Spark's state (docs/hot-path.md).
        "dedup_floor_events_per_s": floor,
        "dedup_floor_ratio": round(floor / unguarded, 3),
        "driver_bytes_per_input_byte": round(sum(first["driver_bytes"].values()) / input_bytes, 4),
        # Not what it received from the tasks: the user_sessions files it read to write them again.
        "driver_rewrite_bytes_per_input_byte": round(rewritten / input_bytes, 4),
    }


def wait_until(condition, timeout: float, every: float = 0.25) -> float | None:
    """Seconds until `condition()` held, or None at the timeout."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if condition():
            return time.monotonic() - started
        time.sleep(every)
    return None


def committed_through(settings: Settings, targets: dict[int, int]) -> bool:
    """Has the stream committed every offset below `targets` (per partition), gold included?"""
    done = kafka_offsets(read_checkpoint(settings.checkpoint_path("events")), settings.topic)
    return all(int(done.get(str(p), -1)) >= end for p, end in targets.items())


def caught_up(settings: Settings) -> bool:
    return committed_through(settings, end_offsets(settings))


def caught_up_with(settings: Settings, backlog: dict[int, int]):
    """A check: is everything produced before `backlog` (end offsets) committed into gold?

    The load may go on meanwhile: this is not "idle", only "past the backlog"."""
    return lambda: committed_through(settings, backlog)
