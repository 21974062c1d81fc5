"""The streaming query itself: started on its checkpoint, the seed read after a reset, and a run
until caught up or stopped, with progress and the engine's own figures."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from eo.core.tables import BRONZE
from eo.runtime import lake
from eo.runtime.config import STREAM_QUERY, Settings
from eo.runtime.environment import environment
from streaming import engine_report, python_workers
from streaming.microbatch import MicroBatch, reads_again
from streaming.plan import PlanInputs, Source, events_plan, kafka_records, start_checked

QUERY = STREAM_QUERY


@dataclass(frozen=True)
class Knobs:
    """Execution knobs. None may change a gold row (docs/design.md invariant 6)."""

    until_caught_up: bool = False
    trigger_seconds: float = 0.0  # 0: the next micro-batch starts as soon as the last one is done
    max_offsets_per_trigger: int | None = None


def bootstrap_offsets(spark: SparkSession, settings: Settings, partitions: list[int]) -> str:
    """Where a new checkpoint starts reading Kafka: right after what bronze already holds.

    So a new checkpoint (after a reset, or a lost one) never writes an offset into bronze twice.
    An empty bronze (a first start) is known from its log, without the Spark job."""
    done = {}
    if not environment(settings).table(BRONZE.name).surely_empty():
        bronze = lake.read(spark, settings, BRONZE).where(F.col("kafka_topic") == settings.topic)
        done = {
            r.kafka_partition: r.last + 1
            for r in bronze.groupBy("kafka_partition").agg(F.max("kafka_offset").alias("last")).collect()
        }
    return json.dumps({settings.topic: {str(p): done.get(p, -2) for p in partitions}})


@dataclass(frozen=True)
class Planned:
    """The query's plan, built before it starts (a standby builds it while it waits, so a takeover
    starts its query sooner: docs/history/hot-path-journal.md, "Recovery"), with what it rests on:
    used only if that is unchanged at the start."""

    frame: DataFrame
    source: Source
    inputs: PlanInputs

    def holds(self, settings: Settings, source: Source) -> bool:
        return source == self.source and PlanInputs.now(settings) == self.inputs


def plan_query(spark: SparkSession, settings: Settings, source: Source, seeding: bool = False) -> Planned:
    inputs = PlanInputs.now(settings)
    records = kafka_records(spark, settings, source)
    return Planned(events_plan(spark, settings, records, seeding, inputs=inputs), source, inputs)


def start_query(
    spark: SparkSession,
    settings: Settings,
    knobs: Knobs,
    batch: MicroBatch,
    source: Source,
    seeding: bool = False,
    planned: Planned | None = None,
):
    """`planned`: a plan of the live query built earlier for `source` (else it is built now)."""
    if planned is not None and seeding:
        raise ValueError("a plan built ahead is the live query's: the seed's reading plans its own")
    plan = (planned or plan_query(spark, settings, source, seeding)).frame
    writer = (
        plan.writeStream.queryName(QUERY)
        .foreachBatch(batch)
        .option("checkpointLocation", settings.checkpoint_path(QUERY))
    )
    if knobs.until_caught_up:
        return start_checked(writer.trigger(availableNow=True), plan)
    return start_checked(writer.trigger(processingTime=f"{knobs.trigger_seconds} seconds"), plan)


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


def write_catch_up(settings: Settings, stats: dict) -> None:
    environment(settings).report_files.write_text(
        f"{settings.source_reports}/streaming/last-catch-up.json", json.dumps(stats, indent=2)
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


def _serve(spark, query, every: float = python_workers.KEEP_WARM_SECONDS) -> None:
    """Wait for a continuous query; while it has no data, keep its tasks' Python workers from
    timing out (streaming/python_workers.py), so the first batch after a lull does not start them."""
    quiet = python_workers.QuietWatch(every)
    while not query.awaitTermination(every / 6):
        progress = query.lastProgress
        if quiet.seen(progress["batchId"] if progress else None, query.status["isTriggerActive"]):
            python_workers.keep_warm(spark, "streaming")


def cross_accepted_gaps(
    spark: SparkSession, settings: Settings, knobs: Knobs, batch: MicroBatch, source: Source, past: dict[int, int]
) -> None:
    """Read past gaps a person accepted on a checkpoint whose next read lies before them: a query
    with Spark's data-loss check off (`source`), only until the checkpoint's committed offsets are
    past them (`past`: per partition), then stopped; the caller starts the query again with the
    check on. A batch it stops midway is read again by that query, its commits exactly-once."""
    from eo.runtime.source_gaps import next_offsets

    def crossed() -> bool:
        reached = next_offsets(settings)
        return all(reached.get(partition, -1) >= end for partition, end in past.items())

    print(f"[streaming] reading past the accepted gaps with Kafka's data-loss check off until {past}", flush=True)
    query = start_query(spark, settings, Knobs(True, 0.0, knobs.max_offsets_per_trigger), batch, source)
    try:
        while not crossed():
            if query.awaitTermination(0.5):
                break  # nothing more to read: the last batch crossed them, or failed (raised here)
    finally:
        query.stop()
    if not crossed():
        raise RuntimeError(f"the query ended before its committed offsets were past the accepted gaps {past}")
    print("[streaming] past the accepted gaps: Kafka's data-loss check is on again", flush=True)


def run_query(
    spark,
    settings: Settings,
    knobs: Knobs,
    batch: MicroBatch,
    source: Source,
    started: float,
    planned: Planned | None = None,
) -> int:
    """Run until caught up or stopped; a poison isolation restarts the query (the batch is read
    again with the poison quarantined unread, by a plan built again). `planned`: the first start's
    plan, built earlier."""
    while True:
        starting = time.monotonic()
        query = start_query(spark, settings, knobs, batch, source, planned=planned)
        print(f"[streaming] query started in {time.monotonic() - starting:.2f} s", flush=True)
        planned = None
        try:
            if knobs.until_caught_up:
                engine = _await(query, batch, started)
                seconds = time.monotonic() - started
                # The newest 100 batches' engine figures, as many as Spark itself keeps.
                stats = {
                    "seconds": round(seconds, 2),
                    "records": batch.records,
                    "driver_bytes": batch.driver_bytes,
                    "driver_parts": batch.driver_parts,
                    "driver_rewrites": asdict(batch.rewrites),
                    "engine": engine[-100:],
                }
                write_catch_up(settings, stats)
                print(f"[streaming] caught up in {seconds:.1f} s: {batch.records:,} records", flush=True)
            else:
                _serve(spark, query)
            return 0
        except Exception as exc:
            if not reads_again(exc):
                raise
            print(f"[streaming] restarting the query: {exc}".splitlines()[0], flush=True)
        finally:
            query.stop()
