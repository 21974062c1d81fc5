"""Run the streaming queries, continuously or until caught up; reset a checkpoint.

    python -m streaming run [--until-caught-up] [--trigger-seconds S]
                            [--max-offsets-per-trigger N] [--max-files-per-trigger N]
    python -m streaming reset --query {ingest,refine}

Also runs as `spark-submit streaming/run.py ...`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path

from jobs import lake
from jobs.config import Settings, load_settings
from jobs.kafka_admin import topic_partitions
from jobs.reference import write_campaigns
from jobs.spark import build_session
from jobs.tables import CAMPAIGNS, ensure_tables
from streaming.queries import QUERIES, Knobs, start_ingest, start_refine


def prepare(spark, settings: Settings) -> None:
    """Tables exist and the reference data is loaded before any query starts."""
    ensure_tables(spark, settings)
    if lake.read(spark, settings, CAMPAIGNS).isEmpty():
        write_campaigns(spark, settings)


def _report(query, started: float) -> None:
    progress = query.lastProgress
    if progress:
        print(
            f"[{query.name}] batch {progress['batchId']}: {progress['numInputRows']} rows, "
            f"{progress.get('processedRowsPerSecond', 0):.0f} rows/s "
            f"(t+{time.monotonic() - started:.0f} s)",
            flush=True,
        )


def _await(query, started: float, every: float = 10.0) -> int:
    """Wait for an availableNow query, reporting progress; returns the rows it processed."""
    rows = 0
    seen: set[int] = set()
    while True:
        done = query.awaitTermination(every)
        for progress in query.recentProgress:
            if progress["batchId"] not in seen:
                seen.add(progress["batchId"])
                rows += progress["numInputRows"]
        _report(query, started)
        if done:
            return rows


def _write_catch_up(settings: Settings, stats: dict) -> None:
    folder = Path(settings.reports_root) / "streaming"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "last-catch-up.json").write_text(json.dumps(stats, indent=2))


def run(settings: Settings, knobs: Knobs, queries: list[str]) -> int:
    spark = build_session("eo-streaming", settings)
    prepare(spark, settings)
    started = time.monotonic()
    partitions = topic_partitions(settings) if "ingest" in queries else []
    if "ingest" in queries and not partitions:
        print(f"topic {settings.topic} not found at {settings.kafka_bootstrap}", file=sys.stderr)
        return 2
    starters = {
        "ingest": lambda: start_ingest(spark, settings, knobs, partitions),
        "refine": lambda: start_refine(spark, settings, knobs),
    }
    if knobs.until_caught_up:
        # One after the other: refine's snapshot of bronze must include all that ingest wrote.
        rows = {name: _await(starters[name](), started) for name in queries}
        seconds = time.monotonic() - started
        _write_catch_up(settings, {"seconds": round(seconds, 2), "rows": rows})
        print(f"[streaming] caught up in {seconds:.1f} s: {rows}", flush=True)
        return 0
    for name in queries:
        starters[name]()
    try:
        spark.streams.awaitAnyTermination()
    finally:
        for query in spark.streams.active:
            query.stop()
    return 0


def reset(settings: Settings, query: str) -> int:
    """Move a checkpoint aside; the next run bootstraps that query from bronze, idempotently."""
    spark = build_session("eo-streaming-reset", settings)
    checkpoint = settings.checkpoint_path(query)
    if not lake.exists(spark, checkpoint):
        print(f"{query}: no checkpoint at {checkpoint}; nothing to reset")
        return 0
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    archived = f"{checkpoint}.reset-{stamp}"
    lake.rename(spark, checkpoint, archived)
    follow_up = {
        "ingest": "ingest restarts from the Kafka offsets right after the last one in bronze",
        "refine": "refine replays bronze from its start; its MERGEs skip what is already there",
    }
    print(f"{query}: checkpoint moved to {archived}; {follow_up[query]}")
    return 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m streaming", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run_cmd = commands.add_parser("run", help="run the streaming queries")
    run_cmd.add_argument("--until-caught-up", action="store_true", help="availableNow, then exit")
    run_cmd.add_argument("--trigger-seconds", type=float, default=5.0)
    run_cmd.add_argument("--max-offsets-per-trigger", type=int)
    run_cmd.add_argument("--max-files-per-trigger", type=int)
    run_cmd.add_argument("--queries", default=",".join(QUERIES), help="comma-separated subset")
    reset_cmd = commands.add_parser("reset", help="move a checkpoint aside (documented bootstrap)")
    reset_cmd.add_argument("--query", choices=QUERIES, required=True)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    settings = load_settings()
    if args.command == "reset":
        return reset(settings, args.query)
    queries = [q for q in args.queries.split(",") if q]
    unknown = set(queries) - set(QUERIES)
    if unknown:
        print(f"unknown queries {sorted(unknown)}; choose from {QUERIES}", file=sys.stderr)
        return 2
    knobs = Knobs(
        until_caught_up=args.until_caught_up,
        trigger_seconds=args.trigger_seconds,
        max_offsets_per_trigger=args.max_offsets_per_trigger,
        max_files_per_trigger=args.max_files_per_trigger,
    )
    return run(settings, knobs, queries)


if __name__ == "__main__":
    raise SystemExit(main())
