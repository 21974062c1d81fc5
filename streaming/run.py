"""Run the streaming queries, continuously or until caught up; reset a checkpoint.

    python -m streaming run [--until-caught-up] [--trigger-seconds S]
                            [--max-offsets-per-trigger N] [--max-files-per-trigger N]
    python -m streaming run --standby [...]   # warm, takes over when the active instance exits
    python -m streaming reset --query {ingest,refine}

Also runs as `spark-submit streaming/run.py ...`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from jobs import lake
from jobs.config import Settings, load_settings
from jobs.fencing import EXIT_FENCED, Fence, claim_version, lease_for, local_root
from jobs.kafka_admin import topic_partitions
from jobs.reference import ensure_reference
from jobs.sinks import postgres
from jobs.spark import build_session
from jobs.tables import BRONZE, CAMPAIGN_MINUTE_METRICS, QUARANTINE, REFERENCE, SILVER, USER_SESSIONS, ensure_tables
from streaming.queries import QUERIES, Knobs, start_ingest, start_refine
from streaming.standby import ActiveLock, wait_for_turn

# The Delta tables each query writes: claimed with the new epoch before its first batch.
WRITES = {"ingest": (BRONZE,), "refine": (QUARANTINE, SILVER, CAMPAIGN_MINUTE_METRICS, USER_SESSIONS)}


def prepare(spark, settings: Settings) -> None:
    """Tables exist and the reference data is loaded before any query starts."""
    ensure_tables(spark, settings)
    ensure_reference(spark, settings)


def _lease(settings: Settings):
    """Where this job's epochs live: PostgreSQL when a sink database is configured, else files."""
    return lease_for(local_root(settings), postgres.configured()[0])


def take_over(spark, settings: Settings, queries: list[str]) -> tuple[dict[str, Fence], list]:
    """New epochs for this instance's queries; every table they write claimed with them.

    From here on an older instance of the same queries cannot commit (jobs/fencing.py).
    """
    dsn, guarantees = postgres.configured()
    if dsn:
        postgres.create_tables(dsn)
    lease = _lease(settings)
    fences = {name: Fence.start(lease, name) for name in queries}
    claims = [
        (table, settings.table_path(table.name), (name, claim_version(fences[name].epoch)))
        for name in queries
        for table in WRITES[name]
    ]
    with ThreadPoolExecutor(len(claims)) as pool:  # independent tables: claim them at once
        list(pool.map(lambda c: lake.claim(spark, *c), claims))
    sinks = [postgres.PostgresSink(dsn, g, fences["refine"]) for g in guarantees] if dsn and "refine" in fences else []
    epochs = ", ".join(f"{name} epoch {fence.epoch}" for name, fence in fences.items())
    print(f"[streaming] {epochs}; PostgreSQL sinks: {', '.join(guarantees) if sinks else 'none'}", flush=True)
    return fences, sinks


# Three layers refuse a stale instance's commit: our epoch checks (Fenced), Spark's checkpoint
# logs (an offset or commit file the newer instance already wrote), Delta's transaction ids.
REFUSALS = {
    "Fenced": "the epoch lease",
    "CONCURRENT_STREAM_LOG_UPDATE": "the streaming checkpoint log",
    "ConcurrentTransactionException": "Delta's transaction ids",
}


def _refused_by(exc: BaseException) -> str | None:
    text = f"{type(exc).__name__}: {exc}"
    return next((layer for marker, layer in REFUSALS.items() if marker in text), None)


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


def warm_up(spark, settings: Settings, queries: list[str]) -> None:
    """What a restarted driver would do first, done ahead: load every table's Delta log and run
    a tiny job on each, so the JVM has compiled the paths a batch takes."""
    tables = {t.name: t for t in (BRONZE, *REFERENCE, *(table for name in queries for table in WRITES[name]))}
    for table in tables.values():
        lake.read(spark, settings, table).limit(1).collect()


def stand_by(spark, settings: Settings, queries: list[str], lock: ActiveLock) -> None:
    began = time.monotonic()
    warm_up(spark, settings, queries)
    print(f"[standby] warm in {time.monotonic() - began:.1f} s; waiting for the active instance to exit", flush=True)
    wait_for_turn(lock, _lease(settings), queries, refresh=lambda: warm_up(spark, settings, queries))
    print("[standby] the active instance is gone: taking over", flush=True)


def run(settings: Settings, knobs: Knobs, queries: list[str], standby: bool = False) -> int:
    began = time.monotonic()
    lock = ActiveLock.for_job(settings, queries)
    if not standby:
        lock.hold()  # first thing: a standby must not mistake this instance's start-up for a vacancy
    spark = build_session("eo-streaming", settings)
    prepare(spark, settings)
    if standby:
        stand_by(spark, settings, queries, lock)
        began = time.monotonic()  # from here on it is a start like any other, only warm
    started = time.monotonic()
    partitions = topic_partitions(settings) if "ingest" in queries else []
    if "ingest" in queries and not partitions:
        print(f"topic {settings.topic} not found at {settings.kafka_bootstrap}", file=sys.stderr)
        return 2
    # Without guarantees (benchmarks only) nothing is fenced or delivered to PostgreSQL.
    fences, sinks = take_over(spark, settings, queries) if knobs.guarantees else ({}, [])
    print(
        f"[streaming] ready in {time.monotonic() - began:.1f} s "
        f"(session and tables {started - began:.1f} s, fencing claims {time.monotonic() - started:.1f} s)",
        flush=True,
    )
    starters = {
        "ingest": lambda: start_ingest(spark, settings, knobs, partitions, fences.get("ingest")),
        "refine": lambda: start_refine(spark, settings, knobs, fences.get("refine"), sinks),
    }
    try:
        return _run_queries(spark, settings, knobs, queries, starters, started)
    except Exception as exc:
        layer = _refused_by(exc)
        if layer is None:
            raise
        epochs = ", ".join(f"{n} epoch {f.epoch}" for n, f in fences.items())
        print(
            f"FENCED: a newer instance of this streaming job has started; {layer} refused this one's "
            f"commit ({epochs}). It stops without committing anything more.",
            file=sys.stderr,
            flush=True,
        )
        return EXIT_FENCED


def _run_queries(spark, settings: Settings, knobs: Knobs, queries: list[str], starters: dict, started: float) -> int:
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
    dsn, _ = postgres.configured()
    if query == "refine" and dsn:
        postgres.reset(dsn, "refine")  # bronze is delivered again from its start
        print("refine: PostgreSQL sink tables emptied; the replay delivers everything again")
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
    run_cmd.add_argument(
        "--no-guarantees",
        action="store_true",
        help="benchmark baseline: plain appends, no dedup, no fencing; gold is NOT exact",
    )
    run_cmd.add_argument("--queries", default=",".join(QUERIES), help="comma-separated subset")
    run_cmd.add_argument(
        "--standby",
        action="store_true",
        help="start warm, wait for the active instance to exit, then take over (streaming/standby.py)",
    )
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
        guarantees=not args.no_guarantees,
    )
    if args.standby and (knobs.until_caught_up or not knobs.guarantees):
        print("--standby is for the continuous, fenced job (not --until-caught-up, --no-guarantees)", file=sys.stderr)
        return 2
    return run(settings, knobs, queries, standby=args.standby)


if __name__ == "__main__":
    raise SystemExit(main())
