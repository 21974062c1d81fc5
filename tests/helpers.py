"""Test helpers: put records into bronze without Kafka, read tables in a stable order."""

from __future__ import annotations

import datetime as dt
import json
import zlib
from collections.abc import Iterable

from eo.core.tables import BRONZE, RECORD_DDL
from eo.runtime import lake
from eo.runtime.config import Settings
from eo.runtime.hooks import Hooks
from eo.runtime.lake import ensure_tables, write_reference

# Test days for the DAGs: on or after their start_date (2026-11-01), and days before any run of
# the suite, so that a scheduled run of "yesterday" never takes a backfilled day.
BASE = dt.datetime(2026, 11, 5, tzinfo=dt.UTC)
# The Kafka timestamp of test records: after every test event, since an event time may not run
# ahead of its record's timestamp by more than clock skew (conf/platform.toml [domains]).
PRODUCED_AT = BASE + dt.timedelta(days=30)


def event(event_id: str, minute: float, user: str = "u1", kind: str = "impression", price=None, **extra) -> dict:
    body = {
        "event_id": event_id,
        "event_type": kind,
        "event_time": (BASE + dt.timedelta(minutes=minute)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
        "user_id": user,
        "session_id": "s1",
        "campaign_id": "c001",
        "ad_id": "a001-1",
    }
    if price is not None:
        body["price"] = price
    body.update(extra)
    return body


def records(payloads: Iterable, partitions: int = 2, topic: str = "t", key_by: str = "event_id") -> list[tuple]:
    """Bronze rows as Kafka would have stored them: keyed by `key_by` (event_id, or user_id as a
    producer keyed by user would), offsets per partition."""
    offsets = [0] * partitions
    rows = []
    for payload in payloads:
        value = payload if isinstance(payload, str | bytes) else json.dumps(payload)
        value = value.encode() if isinstance(value, str) else value
        key = payload.get(key_by, "") if isinstance(payload, dict) else ""
        partition = zlib.crc32(str(key).encode()) % partitions
        rows.append((key, value, topic, partition, offsets[partition], PRODUCED_AT))
        offsets[partition] += 1
    return rows


def bronze_frame(spark, rows: list[tuple]):
    """Kafka records in bronze's shape, before the stream marks their ingest batch."""
    return spark.createDataFrame(rows, RECORD_DDL)


def prepare_lake(spark, settings: Settings, rows: list[tuple] | None = None) -> None:
    """Create every table (and the campaigns reference); optionally append bronze rows."""
    ensure_tables(spark, settings)
    write_reference(spark, settings)
    if rows:
        bronze_frame(spark, rows).write.format("delta").mode("append").save(settings.table_path(BRONZE.name))


def micro_batch(settings: Settings, live: bool = False, **options):
    """The streaming job's foreachBatch with an epoch of its own, from the environment's lease.
    `live`: its commits carry the app id of the checkpoint's generation, as the job's do (what a
    rebuild into the live tables claims); else the query's name."""
    from eo.runtime.environment import environment
    from eo.runtime.fencing import Fence
    from eo.runtime.live_tables import app_id_of
    from streaming import checkpoint
    from streaming.microbatch import MicroBatch
    from streaming.run import QUERY

    app_id = app_id_of(checkpoint.ensure_id(settings, QUERY)) if live else QUERY
    return MicroBatch(settings, Fence.start(environment(settings).lease(), QUERY), app_id, **options)


def stream(spark, settings: Settings, batches: list[list[tuple]], batch=None):
    """Run the real streaming query over bronze-shaped rows, one micro-batch per list, as Kafka
    would deliver them: the same plan and foreachBatch as `streaming run`, with a Delta table of
    the records standing in for the topic. A poison isolation restarts the query, as the job does.

    A micro-batch given as a tuple of lists is written as one file per list: several tasks read it,
    as several Kafka partitions would be read, and their rows meet the engine's state in any order."""

    source = f"{settings.checkpoint_root}/_test_records"
    batch = batch or micro_batch(settings, log_progress=False)
    for given in batches:
        files = given if isinstance(given, tuple) else (given,)
        rows = [row for file in files for row in file]
        # Bisecting a batch reads its records again: these are the ones.
        batch.records_of = lambda _batch_id, rows=rows: bronze_frame(spark, rows)
        for file in files:
            bronze_frame(spark, file).coalesce(1).write.format("delta").mode("append").save(source)
        resume(spark, settings, batch)
    return batch


def resume(spark, settings: Settings, batch=None):
    """The query started again on what the stand-in source holds (a restart after a crash: the
    last planned batch is replayed), run until caught up."""
    from streaming.microbatch import reads_again
    from streaming.plan import events_plan, start_checked
    from streaming.run import QUERY

    source = f"{settings.checkpoint_root}/_test_records"
    batch = batch or micro_batch(settings, log_progress=False)
    while True:
        plan = events_plan(spark, settings, spark.readStream.format("delta").load(source))
        writer = (
            plan.writeStream.foreachBatch(batch)
            .option("checkpointLocation", settings.checkpoint_path(QUERY))
            .trigger(availableNow=True)
        )
        query = start_checked(writer, plan)
        try:
            query.awaitTermination()
            return batch
        except Exception as exc:
            if not reads_again(exc):
                raise
            print(f"[test] the query restarts: {exc}", flush=True)
        finally:
            query.stop()


def forget_last_commit(settings: Settings) -> None:
    """What a crash after the Delta commits but before Spark's commit log leaves behind: the next
    run of the query replays the last micro-batch."""
    from pathlib import Path

    from streaming.run import QUERY

    commits = Path(settings.checkpoint_path(QUERY)) / "commits"
    last = max(commits.glob("[0-9]*"), key=lambda p: int(p.name))
    last.unlink()
    (commits / f".{last.name}.crc").unlink(missing_ok=True)  # the local file system's checksum


def sorted_rows(spark, settings: Settings, table, namespace: str = "main") -> list:
    frame = lake.read(spark, settings, table, namespace)
    return sorted(frame.collect(), key=lambda r: tuple(str(r[k]) for k in table.key))


class CrashOnce(Hooks):
    """The driver dies at `where`, once: what a kill there leaves behind, in this process."""

    def __init__(self, where: str) -> None:
        self.where, self.fired = where, False

    def point(self, name: str) -> None:
        if name == self.where and not self.fired:
            self.fired = True
            raise RuntimeError(f"crash at {name}")
