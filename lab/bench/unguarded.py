"""The pipeline without its guarantees: the baseline that prices them (make bench only).

    spark-submit lab/bench/unguarded.py [--dedup-floor] [--max-offsets-per-trigger N]     (lab/bench/pipeline.py)

The same Kafka read (streaming/plan.py `kafka_records`) and the same strict reading (eo/runtime/reading.py
`classify_records`, as streaming/plan.py `events_plan` calls it, poison list included) as the
streaming job, until caught up (availableNow); each micro-batch is one Spark job whose tasks
write the append tables' files, as in the job (streaming/task_writes.py), and then:

- no engine dedup state: every valid copy of an event is appended to silver;
- no transaction ids, fencing or claims: plain delta-rs commits, the five at once as the job does;
- gold: each batch's own partial aggregates (its tasks' minute_metrics and sessions, added up as
  the job adds them, eo/core/transforms/), appended. A duplicate or a replayed batch is counted
  twice, a user counts once per copy and task, and windows and sessions that span batches are
  split: gold is NOT exact.

It runs on the stream's own seams (the plan's `aligned`, the tasks' writes, the micro-batch's `all_at_once`,
the query's `write_catch_up`), so only what it leaves out differs. Writes
`<reports_root>/streaming/last-catch-up.json` {seconds, records} like `streaming run --until-caught-up`,
with seconds from when its session and tables are ready.

`--dedup-floor` (query `dedup_floor`) adds the one thing that no guarded plan on Spark's state can
leave out while copies of an event may sit on any Kafka partition: every reading shuffled by its
event id into Spark's own `dropDuplicates` (state 1's key, streaming/plan.py `first_key`; no
arrival order, no user-tuple state, gold still not exact). Its throughput over the unguarded one
bounds the guarantee ratio any such plan can reach on this machine (docs/hot-path.md).
"""

from __future__ import annotations

import argparse
import time

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from eo.core.gold import counting_table, sessions_table, summed_tables
from eo.core.tables import BRONZE, GOLD, QUARANTINE, RECORD_COLUMNS, SILVER
from eo.core.transforms.metrics import window_start_column
from eo.core.transforms.sessions import sessionize
from eo.runtime.commits import commit_files, conform
from eo.runtime.config import Settings, load_settings
from eo.runtime.data_files import add_actions
from eo.runtime.environment import environment
from eo.runtime.reading import classify_records
from eo.runtime.spark import build_session
from streaming import poison, task_writes
from streaming.microbatch import StepTimer, all_at_once
from streaming.plan import Source, aligned, first_key, kafka_records
from streaming.query import write_catch_up
from streaming.takeover import prepare

QUERY = "unguarded"
FLOOR_QUERY = "dedup_floor"


def unguarded_plan(spark, settings: Settings, records: DataFrame, dedup: bool = False) -> DataFrame:
    """B rows (every record), Q rows (refused), and EU rows (every valid copy, its user counted): no engine state.

    `dedup`: the readings go through Spark's own deduplication by event id first (one copy each)."""
    read = classify_records(spark, settings, records, poison.recorded(settings))
    if dedup:
        read = read.withColumn("_first", first_key()).dropDuplicates(["_first"]).drop("_first")
    read = read.withColumn("event_date", F.to_date("event_time")).withColumn("window_start", window_start_column())
    kinds = read.withColumn("_kind", F.when(F.col("reason").isNull(), F.lit("EU")).otherwise(F.lit("Q")))
    bronze = records.select(F.lit("B").alias("_kind"), *RECORD_COLUMNS)
    return aligned(bronze).unionByName(aligned(kinds))


class UnguardedBatch:
    """foreachBatch: plain appends of bronze, quarantine, silver and each batch's partial gold."""

    def __init__(self, settings: Settings, query: str = QUERY) -> None:
        names = (BRONZE, QUARANTINE, SILVER, *GOLD)
        self.tables = {t.name: environment(settings).table(t.name) for t in names}
        self.settings = settings
        self.targets = task_writes.targets(settings, {name: t.schema() for name, t in self.tables.items()})
        self.records = 0
        self.query = query

    def append(self, name: str, rows: pa.Table) -> None:
        from deltalake import write_deltalake

        table = self.tables[name]
        write_deltalake(table.current, conform(rows, table.schema()), mode="append")

    def append_files(self, name: str, actions: list[dict]) -> None:
        commit_files(self.tables[name].refresh(), add_actions(actions))

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        timer = StepTimer()
        written = task_writes.write_in_tasks(batch, self.settings, self.targets, f"u{batch_id}")
        timer.lap("read+write")
        work = {
            **{name: (lambda name=name: self.append_files(name, written.actions[name])) for name in written.actions},
            # Every declared gold table, its batch's partial rows appended: no merge, no guarantee.
            counting_table().name: lambda: self.append(counting_table().name, written.metrics),
            sessions_table().name: lambda: self.append(sessions_table().name, sessionize(written.intervals)),
            **{t.name: (lambda t=t: self.append(t.name, written.sums[t.name])) for t in summed_tables()},
        }
        all_at_once(work)
        timer.lap("commit")
        self.records += written.rows[BRONZE.name]
        print(
            f"[{self.query}] batch {batch_id}: {written.rows[BRONZE.name]} records -> quarantine "
            f"{written.rows[QUARANTINE.name]}, silver +{written.rows[SILVER.name]} ({timer})",
            flush=True,
        )


def catch_up(settings: Settings, max_offsets: int | None, dedup: bool = False) -> dict:
    query_name = FLOOR_QUERY if dedup else QUERY
    spark = build_session(f"eo-bench-{query_name}", settings)
    prepare(spark, settings)
    started = time.monotonic()
    records = kafka_records(spark, settings, Source(starting_offsets="earliest", max_offsets_per_trigger=max_offsets))
    batch = UnguardedBatch(settings, query_name)
    query = (
        unguarded_plan(spark, settings, records, dedup)
        .writeStream.queryName(query_name)
        .foreachBatch(batch)
        .option("checkpointLocation", settings.checkpoint_path(query_name))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    stats = {"seconds": round(time.monotonic() - started, 2), "records": batch.records}
    write_catch_up(settings, stats)
    print(f"[{query_name}] caught up in {stats['seconds']} s: {stats['records']:,} records", flush=True)
    return stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-offsets-per-trigger", type=int)
    parser.add_argument("--dedup-floor", action="store_true", help="deduplicate by event id (Spark's own state)")
    args = parser.parse_args(argv)
    catch_up(load_settings(), args.max_offsets_per_trigger, args.dedup_floor)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
