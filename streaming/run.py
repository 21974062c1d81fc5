"""Run the streaming query, continuously or until caught up; reset its checkpoint.

    python -m streaming run [--until-caught-up] [--trigger-seconds S] [--max-offsets-per-trigger N]
    python -m streaming run --standby [...]   # warm, takes over when the active instance exits
    python -m streaming reset                 # rebuild from bronze, new checkpoint (streaming/reset.py)

One query, `events`: Kafka -> bronze, quarantine, silver and gold, one micro-batch at a time
(streaming/plan.py, streaming/microbatch.py). Also runs as `spark-submit streaming/run.py ...`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs import commits, lake, storage
from jobs.cli import EXIT_CODES, NotReady, guarded
from jobs.config import STREAM_QUERY, Settings, load_settings
from jobs.fencing import EXIT_FENCED, Fence, lease_for
from jobs.kafka_admin import end_offsets, topic_partitions
from jobs.reference import ensure_reference
from jobs.sinks import postgres
from jobs.spark import build_session, close_state_stores
from jobs.tables import BRONZE, SEED, ensure_tables
from streaming import checkpoint, engine_report
from streaming.microbatch import WRITES, MicroBatch, PoisonIsolated
from streaming.plan import Source, events_plan, kafka_records, kafka_records_between
from streaming.standby import ActiveLock, wait_for_turn

QUERY = STREAM_QUERY


@dataclass(frozen=True)
class Knobs:
    """Execution knobs. None may change a gold row (DESIGN.md invariant 6)."""

    until_caught_up: bool = False
    trigger_seconds: float = 0.0  # 0: the next micro-batch starts as soon as the last one is done
    max_offsets_per_trigger: int | None = None


def prepare(spark, settings: Settings) -> None:
    """Tables exist and the reference data is loaded before the query starts."""
    ensure_tables(spark, settings)
    ensure_reference(spark, settings)


def _lease(settings: Settings):
    """Where the job's epochs live: PostgreSQL when a sink database is configured, else files."""
    return lease_for(settings, postgres.configured()[0])


def take_over(settings: Settings, app_id: str) -> tuple[Fence, list[postgres.PostgresSink]]:
    """A new epoch for this instance; every table the query writes claimed with it.

    From here on an older instance cannot commit (jobs/fencing.py, jobs/commits.py)."""
    dsn, guarantees = postgres.configured()
    if dsn:
        postgres.create_tables(dsn)
    fence = Fence.start(_lease(settings), QUERY)
    tables = [storage.delta_table(settings, t.name) for t in WRITES]
    with ThreadPoolExecutor(len(tables)) as pool:  # independent tables: claim them at once
        list(pool.map(lambda table: commits.claim(table, app_id, fence.epoch), tables))
    sinks = [postgres.PostgresSink(dsn, g, fence) for g in guarantees] if dsn else []
    print(
        f"[streaming] {QUERY} epoch {fence.epoch}; PostgreSQL sinks: {', '.join(guarantees) if sinks else 'none'}",
        flush=True,
    )
    return fence, sinks


# Three layers refuse a stale instance's commit: our epoch checks (Fenced), Spark's checkpoint
# logs (an offset or commit file the newer instance already wrote), delta-rs's conflict checks
# ("Concurrent transaction failed", "a concurrent transaction added new data", ...).
REFUSALS = {
    "fenced": "the epoch lease",
    "concurrent_stream_log_update": "the streaming checkpoint log",
    "concurrent transaction": "Delta's conflict checks",
}


def _refused_by(exc: BaseException, fence: Fence) -> str | None:
    """Which layer stopped a superseded instance, or None when the error is this instance's own.

    A paused instance can wake up anywhere in a batch, so the first thing to fail may be none of
    the layers above (a state file, a Kafka read); once the lease shows a newer epoch, the failure
    is the fencing all the same, and no commit of this instance can follow it."""
    text = f"{type(exc).__name__}: {exc}".lower()
    layer = next((layer for marker, layer in REFUSALS.items() if marker in text), None)
    if layer is not None:
        return layer
    try:
        superseded = fence.lease.current(fence.job) != fence.epoch
    except Exception:  # noqa: BLE001 (the lease is unreachable: report the original error)
        return None
    return f"the epoch lease (after {type(exc).__name__})" if superseded else None


def bootstrap_offsets(spark: SparkSession, settings: Settings, partitions: list[int]) -> str:
    """Where a new checkpoint starts reading Kafka: right after what bronze already holds.

    So a new checkpoint (after a reset, or a lost one) never writes an offset into bronze twice."""
    bronze = lake.read(spark, settings, BRONZE).where(F.col("kafka_topic") == settings.topic)
    done = {
        r.kafka_partition: r.last + 1
        for r in bronze.groupBy("kafka_partition").agg(F.max("kafka_offset").alias("last")).collect()
    }
    return json.dumps({settings.topic: {str(p): done.get(p, -2) for p in partitions}})


def start_query(
    spark: SparkSession, settings: Settings, knobs: Knobs, batch: MicroBatch, source: Source, seeding: bool = False
):
    records = kafka_records(spark, settings, source)
    plan = events_plan(spark, settings, records, seeding)
    writer = (
        plan.writeStream.queryName(QUERY)
        .foreachBatch(batch)
        .option("checkpointLocation", settings.checkpoint_path(QUERY))
    )
    if knobs.until_caught_up:
        return writer.trigger(availableNow=True).start()
    return writer.trigger(processingTime=f"{knobs.trigger_seconds} seconds").start()


def read_seed(spark: SparkSession, settings: Settings, batch: MicroBatch, source: Source) -> None:
    """After a reset: the seed into the engine state, with what Kafka has meanwhile; a live copy of
    an event the seed holds is set aside, never taken for new (streaming/plan.py)."""
    began = time.monotonic()
    query = start_query(spark, settings, Knobs(until_caught_up=True), batch, source, seeding=True)
    try:
        query.awaitTermination()
    finally:
        query.stop()
    print(f"[streaming] seed read into the engine state in {time.monotonic() - began:.1f} s", flush=True)


# Records per partition a rehearsal reads: enough for the JIT to compile what a batch runs.
REHEARSAL_RECORDS = 5_000


def rehearse(spark, settings: Settings) -> None:
    """Run the query's own plan once, over the newest records and into nothing, on a scratch
    checkpoint: a standby that takes over then finds Spark's generated code compiled and the JVM
    warm (a first batch in a cold JVM cost ~4 s more than a warm one). Nothing reaches the lake."""
    ends = end_offsets(settings)
    start = {settings.topic: {str(p): max(0, end - REHEARSAL_RECORDS) for p, end in ends.items()}}
    scratch = settings.checkpoint_path(f"{QUERY}-rehearsal")
    storage.delete_tree(settings, scratch)
    try:
        records = kafka_records(spark, settings, Source(starting_offsets=json.dumps(start)))
        plan = events_plan(spark, settings, records, rehearsal=True)
        writer = plan.writeStream.queryName(f"{QUERY}-rehearsal").foreachBatch(lambda rows, _batch: rows.toArrow())
        writer.option("checkpointLocation", scratch).trigger(availableNow=True).start().awaitTermination()
    finally:
        storage.delete_tree(settings, scratch)


def stand_by(spark, settings: Settings, lock: ActiveLock) -> None:
    began = time.monotonic()
    rehearse(spark, settings)
    print(f"[standby] warm in {time.monotonic() - began:.1f} s; waiting for the active instance to exit", flush=True)
    wait_for_turn(lock, _lease(settings), [QUERY])
    print("[standby] the active instance is gone: taking over", flush=True)


def _write_catch_up(settings: Settings, stats: dict) -> None:
    storage.write_text(
        settings, f"{settings.reports_root.rstrip('/')}/streaming/last-catch-up.json", json.dumps(stats, indent=2)
    )


def _engine_profiles(query, after: int) -> list[dict]:
    """Spark's own figures of the batches after `after`, each printed once (streaming/engine_report.py)."""
    found = engine_report.new_profiles([json.loads(p.json) for p in query.recentProgress], after)
    for each in found:
        print(engine_report.profile_line(QUERY, each), flush=True)
    return found


def _await(query, batch: MicroBatch, started: float, every: float = 10.0) -> list[dict]:
    """Wait for an availableNow query, reporting progress; the engine's figures of its batches."""
    profiles: list[dict] = []
    while True:
        done = query.awaitTermination(every)
        profiles += _engine_profiles(query, profiles[-1]["batch"] if profiles else -1)
        if done:
            return profiles
        elapsed = time.monotonic() - started
        print(
            f"[{QUERY}] {batch.records:,} records committed, {batch.records / elapsed:,.0f} records/s "
            f"(t+{elapsed:.0f} s)",
            flush=True,
        )


def _run_query(spark, settings: Settings, knobs: Knobs, batch: MicroBatch, source: Source, started: float) -> int:
    """Run until caught up or stopped; a poison isolation restarts the query (the batch is read
    again with the poison quarantined unread)."""
    while True:
        query = start_query(spark, settings, knobs, batch, source)
        try:
            if knobs.until_caught_up:
                engine = _await(query, batch, started)
                seconds = time.monotonic() - started
                # The newest 100 batches' engine figures, as many as Spark itself keeps.
                stats = {"seconds": round(seconds, 2), "records": batch.records, "engine": engine[-100:]}
                _write_catch_up(settings, stats)
                print(f"[streaming] caught up in {seconds:.1f} s: {batch.records:,} records", flush=True)
            else:
                query.awaitTermination()
            return 0
        except Exception as exc:
            if PoisonIsolated.__name__ not in str(exc):
                raise
            print(f"[streaming] restarting the query: {exc}".splitlines()[0], flush=True)
        finally:
            query.stop()


def run(settings: Settings, knobs: Knobs, standby: bool = False) -> int:
    lock = ActiveLock.for_job(settings, [QUERY])
    if not standby:
        lock.hold()  # first thing: a standby must not mistake this instance's start-up for a vacancy
    try:
        return _run(settings, knobs, standby, lock)
    finally:
        lock.release()  # the process may go on (tests, tools): the job is over


def _partitions(settings: Settings) -> list[int]:
    """The topic's partitions; NotReady (one line, exit 3) when the broker or the topic is missing."""
    partitions = topic_partitions(settings)  # a broker that is down raises: jobs/cli.py explains it
    if not partitions:
        raise NotReady(
            f"topic {settings.topic} not found at {settings.kafka_bootstrap}: create it by producing "
            "(`python -m producer generate`) or with `make demo`"
        )
    return partitions


def _run(settings: Settings, knobs: Knobs, standby: bool, lock: ActiveLock) -> int:
    began = time.monotonic()
    _partitions(settings)  # before Spark starts: a broker that is down is said in seconds
    spark = build_session("eo-streaming", settings)
    prepare(spark, settings)
    if standby:
        stand_by(spark, settings, lock)
        began = time.monotonic()  # from here on it is a start like any other, only warm
    partitions = _partitions(settings)
    started = time.monotonic()
    generation = checkpoint.ensure_id(settings, QUERY)
    app_id = f"{QUERY}-{generation}"
    fence, sinks = take_over(settings, app_id)
    new = not checkpoint.has_offsets(settings, QUERY)
    source = Source(
        starting_offsets=bootstrap_offsets(spark, settings, partitions) if new else None,
        max_offsets_per_trigger=knobs.max_offsets_per_trigger,
    )
    print(
        f"[streaming] ready in {time.monotonic() - began:.1f} s "
        f"(session and tables {started - began:.1f} s, fencing claims {time.monotonic() - started:.1f} s)",
        flush=True,
    )

    def records_of(batch_id: int) -> DataFrame:
        start, end = checkpoint.kafka_range(settings, QUERY, batch_id)
        return kafka_records_between(spark, settings, start, end)

    batch = MicroBatch(settings, fence, app_id, sinks, records_of=records_of)
    try:
        if new and not lake.read(spark, settings, SEED).isEmpty():
            read_seed(spark, settings, batch, source)
        return _run_query(spark, settings, knobs, batch, source, started)
    except Exception as exc:
        layer = _refused_by(exc, fence)
        if layer is None:
            raise
        print(
            f"FENCED: a newer instance of this streaming job has started; {layer} refused this one's "
            f"commit ({QUERY} epoch {fence.epoch}). It stops without committing anything more.",
            file=sys.stderr,
            flush=True,
        )
        return EXIT_FENCED


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m streaming", description=__doc__.split("\n")[0], epilog=EXIT_CODES)
    commands = parser.add_subparsers(dest="command", required=True)
    run_cmd = commands.add_parser("run", help="run the streaming query")
    run_cmd.add_argument("--until-caught-up", action="store_true", help="availableNow, then exit")
    run_cmd.add_argument("--trigger-seconds", type=float, default=0.0)
    run_cmd.add_argument("--max-offsets-per-trigger", type=int)
    run_cmd.add_argument(
        "--standby",
        action="store_true",
        help="start warm, wait for the active instance to exit, then take over (streaming/standby.py)",
    )
    commands.add_parser("reset", help="rebuild from bronze and start a new checkpoint (streaming/reset.py)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    settings = load_settings()
    if args.command == "reset":
        from streaming.reset import reset

        return reset(settings)
    knobs = Knobs(
        until_caught_up=args.until_caught_up,
        trigger_seconds=args.trigger_seconds,
        max_offsets_per_trigger=args.max_offsets_per_trigger,
    )
    if args.standby and knobs.until_caught_up:
        print("--standby is for the continuous job (not --until-caught-up)", file=sys.stderr)
        return 2
    return run(settings, knobs, standby=args.standby)


def cli(argv: list[str] | None = None) -> int:
    """The process's entry point (`python -m streaming`, `spark-submit streaming/run.py`)."""
    try:
        return guarded(main, argv)
    finally:
        close_state_stores()


if __name__ == "__main__":
    raise SystemExit(cli())
