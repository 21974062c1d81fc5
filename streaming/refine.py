"""bronze -> silver + quarantine -> gold, one foreachBatch call per micro-batch.

Every step is idempotent, so a batch replayed after a crash at any point converges to the same
tables:
1. quarantine: insert-if-missing on the source coordinates;
2. silver: insert-if-missing on event_id (first copy wins, across all history);
3. gold: the keys this batch can change are recomputed from silver and upserted;
4. external sinks (PostgreSQL, optional): the batch's increments, under their guarantee.

A batch that fails because of its records is bisected (streaming/poison.py): the records that
fail alone are quarantined as poison, and the rest is refined; any other error stops the job.

Every Delta write carries this instance's fencing transaction id (jobs/fencing.py).

Gold reads silver right after step 2 of the same batch, so it always sees exactly the events the
stream has processed; that is what keeps gold exact whatever the lateness (DESIGN.md, late data).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs import faults, lake
from jobs.config import Settings
from jobs.fencing import Fence
from jobs.reading import classify_records
from jobs.sinks.postgres import PostgresSink
from jobs.tables import (
    CAMPAIGN_MINUTE_METRICS,
    QUARANTINE,
    SILVER,
    SOURCE_KEY,
    USER_SESSIONS,
)
from jobs.transforms.dedup import first_copies
from jobs.transforms.metrics import METRIC_KEY, affected_windows, campaign_minute_metrics, revenue, with_window
from jobs.transforms.parse import quarantine_rows, valid_events
from jobs.transforms.sessions import (
    events_in_ranges,
    gap,
    recompute_ranges,
    session_changes,
    sessionize,
    touched_sessions,
)
from streaming import poison


def _sql_dates(dates: list[str]) -> str:
    return ", ".join(f"DATE'{d}'" for d in sorted(dates))


def bounds(new: DataFrame) -> tuple[str | None, list[str]]:
    """The earliest event time and the event days of a batch's new events, as text.

    Text, not datetimes: a value derived from a record never has to fit Python's types.
    """
    lo, dates = new.agg(F.min("event_time").cast("string"), F.collect_set(F.col("event_date").cast("string"))).first()
    return lo, list(dates or [])


class StepTimer:
    """Seconds per step of one micro-batch, for the progress line."""

    def __init__(self) -> None:
        self.started = self.last = time.monotonic()
        self.steps: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.steps[name] = now - self.last
        self.last = now

    def __str__(self) -> str:
        laps = " ".join(f"{k} {v:.1f}" for k, v in self.steps.items())
        return f"{time.monotonic() - self.started:.1f} s: {laps}"


@dataclass
class RefineBatch:
    """The foreachBatch function of the refine query."""

    settings: Settings
    fence: Fence | None = None
    sinks: list[PostgresSink] = field(default_factory=list)
    log_progress: bool = True

    def txn(self, batch_id: int, attempt: int = 0):
        return (self.fence.job, self.fence.version(batch_id, attempt)) if self.fence else None

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        if self.fence:
            self.fence.check()
        try:
            self.refine(batch, batch_id)
        except Exception as exc:
            if not poison.may_be_data(exc):
                raise
            self.isolate(batch, batch_id, exc)

    def refine(self, batch: DataFrame, batch_id: int, attempt: int = 0, poison_rows: DataFrame | None = None) -> None:
        """`poison_rows`: (coordinates, reason) of records to quarantine unread, as the rebuild does."""
        timer = StepTimer()
        txn = self.txn(batch_id, attempt)
        spark = batch.sparkSession
        classified = classify_records(spark, self.settings, batch, poison_rows).persist()
        try:
            counts = {
                r.valid: r["count"]
                for r in classified.groupBy(F.col("reason").isNull().alias("valid")).count().collect()
            }
            if not counts:
                return
            timer.lap("parse")
            if counts.get(False):
                lake.insert_missing(spark, self.path(QUARANTINE), quarantine_rows(classified), QUARANTINE.key, txn=txn)
                timer.lap("quarantine")
            new = first_copies(valid_events(classified)).persist()
            lo, dates = bounds(new)
            inserted = 0
            if dates:
                # Only the days this batch touches are read: the cost does not grow with history.
                where = f"t.event_date IN ({_sql_dates(dates)})"
                inserted = lake.insert_missing(spark, self.path(SILVER), new, SILVER.key, where, txn)
                inserted = inserted.get("num_inserted_rows", 0)
            timer.lap("silver")
            if dates:
                self.refresh_metrics(new, dates, txn)
                timer.lap("metrics")
                self.refresh_sessions(new, lo, txn)
                timer.lap("sessions")
            faults.point("refine.after_delta_commit")
            if self.sinks and dates:
                rows = self.increments(new, dates)
                for sink in self.sinks:
                    sink.deliver(batch_id, rows)
                timer.lap("postgres")
            new.unpersist()
            if self.log_progress:
                print(
                    f"[refine] batch {batch_id}: {sum(counts.values())} records -> silver +{inserted}, "
                    f"quarantine {counts.get(False, 0)}, duplicates {counts.get(True, 0) - inserted} ({timer})",
                    flush=True,
                )
        finally:
            classified.unpersist()

    def dry_read(self, rows: DataFrame) -> None:
        """The reading of the batch's records (one Spark job), with nothing written."""
        classify_records(rows.sparkSession, self.settings, rows).write.format("noop").mode("overwrite").save()

    def dry_run(self, rows: DataFrame) -> None:
        """What `refine` computes from the batch's own records, with nothing written."""
        classified = classify_records(rows.sparkSession, self.settings, rows)
        new = first_copies(valid_events(classified))
        for frame in (quarantine_rows(classified), campaign_minute_metrics(new), sessionize(new)):
            frame.write.format("noop").mode("overwrite").save()
        bounds(new)

    def isolate(self, batch: DataFrame, batch_id: int, error: Exception) -> None:
        """Quarantine the records that make this batch fail, then refine the rest (streaming/poison.py)."""
        spark = batch.sparkSession
        print(
            f"[refine] batch {batch_id} failed ({poison.error_class(error)}); "
            "looking for the records that cause it, by bisection",
            flush=True,
        )
        batch = batch.persist()
        began = time.monotonic()
        try:
            found = poison.find_poison(batch, [self.dry_read, self.dry_run])
            if not found:
                print(f"[refine] batch {batch_id}: no single record reproduces the failure; stopping", flush=True)
                raise error
            seconds = time.monotonic() - began
            # The same batch again, its poison quarantined unread with the rest of its quarantine.
            self.refine(batch, batch_id, attempt=1, poison_rows=poison.poison_reasons(spark, found))
            where = ", ".join(f"{s.topic}/{s.partition}/{s.first} ({reason})" for s, reason in found)
            print(
                f"[refine] batch {batch_id}: quarantined {len(found)} poison record(s) in {seconds:.1f} s: {where}",
                flush=True,
            )
            poison.record_isolation(self.settings, batch_id, found, seconds)
        finally:
            batch.unpersist()

    def path(self, table) -> str:
        return self.settings.table_path(table.name)

    def increments(self, new: DataFrame, dates: list[str]) -> list[tuple]:
        """What the events this batch added to silver add to each metric key.

        "Added by this batch" is decided by source coordinates, so a replay finds the same rows
        even though silver already holds them.
        """
        silver = lake.read(new.sparkSession, self.settings, SILVER).where(f"event_date IN ({_sql_dates(dates)})")
        fresh = new.join(silver.select("event_id", *SOURCE_KEY), on=["event_id", *SOURCE_KEY], how="left_semi")
        totals = (
            with_window(fresh).groupBy(*METRIC_KEY).agg(F.count(F.lit(1)).alias("events"), revenue().alias("revenue"))
        )
        return [tuple(r) for r in totals.collect()]

    def refresh_metrics(self, new: DataFrame, dates: list[str], txn=None) -> None:
        """Recompute, from silver, every (campaign, type, minute) this batch touched."""
        spark = new.sparkSession
        keys = affected_windows(new)
        silver = lake.read(spark, self.settings, SILVER).where(f"event_date IN ({_sql_dates(dates)})")
        scope = silver.withColumn("window_start", F.date_trunc("minute", "event_time")).join(
            keys, on=list(CAMPAIGN_MINUTE_METRICS.key), how="left_semi"
        )
        lake.upsert(
            spark,
            self.path(CAMPAIGN_MINUTE_METRICS),
            campaign_minute_metrics(scope.drop("window_start")),
            CAMPAIGN_MINUTE_METRICS.key,
            target_filter=f"t.window_date IN ({_sql_dates(dates)})",
            txn=txn,
        )

    def refresh_sessions(self, new: DataFrame, lo: str, txn=None) -> None:
        """Recompute the sessions this batch's events can extend, join or create."""
        spark = new.sparkSession
        events = new.select("user_id", "event_time")
        reach = F.to_timestamp(F.lit(lo)) - gap()
        current = lake.read(spark, self.settings, USER_SESSIONS).where(F.col("session_end") >= reach)
        touched = touched_sessions(events, current).persist()
        ranges = recompute_ranges(events, touched).persist()
        first, last = ranges.agg(F.min("range_start").cast("string"), F.max("range_end").cast("string")).first()
        silver = lake.read(spark, self.settings, SILVER).where(
            F.col("event_date").between(F.to_date(F.lit(first)), F.to_date(F.lit(last)))
        )
        recomputed = sessionize(events_in_ranges(silver, ranges))
        changes = session_changes(recomputed, touched)
        # Every changed or deleted session starts inside a range: older days need not be read.
        since = f"t.session_date >= DATE'{first[:10]}'"
        lake.apply_changes(spark, self.path(USER_SESSIONS), changes, USER_SESSIONS.key, since, txn)
        touched.unpersist()
        ranges.unpersist()
