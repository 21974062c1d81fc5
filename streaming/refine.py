"""bronze -> silver + quarantine -> gold, one foreachBatch call per micro-batch.

Every step is idempotent, so a batch replayed after a crash at any point converges to the same
tables:
1. quarantine: insert-if-missing on the source coordinates;
2. silver: insert-if-missing on event_id (first copy wins, across all history);
3. gold: the keys this batch can change are recomputed from silver and upserted.

Gold reads silver right after step 2 of the same batch, so it always sees exactly the events the
stream has processed; that is what keeps gold exact whatever the lateness (DESIGN.md, late data).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs import lake
from jobs.config import Settings
from jobs.tables import (
    CAMPAIGN_MINUTE_METRICS,
    CAMPAIGNS,
    QUARANTINE,
    SILVER,
    USER_SESSIONS,
)
from jobs.transforms.dedup import first_copies
from jobs.transforms.metrics import affected_windows, campaign_minute_metrics
from jobs.transforms.parse import classify, parse_events, quarantine_rows, valid_events
from jobs.transforms.sessions import (
    events_in_ranges,
    gap,
    recompute_ranges,
    session_changes,
    sessionize,
    touched_sessions,
)


def _sql_dates(dates) -> str:
    return ", ".join(f"DATE'{d.isoformat()}'" for d in sorted(dates))


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
    log_progress: bool = True

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        timer = StepTimer()
        spark = batch.sparkSession
        campaigns = lake.read(spark, self.settings, CAMPAIGNS)
        classified = classify(parse_events(batch), campaigns).persist()
        try:
            counts = {
                r.valid: r["count"]
                for r in classified.groupBy(F.col("reason").isNull().alias("valid")).count().collect()
            }
            if not counts:
                return
            timer.lap("parse")
            if counts.get(False):
                lake.insert_missing(spark, self.path(QUARANTINE), quarantine_rows(classified), QUARANTINE.key)
                timer.lap("quarantine")
            new = first_copies(valid_events(classified)).persist()
            inserted = lake.insert_missing(spark, self.path(SILVER), new, SILVER.key).get("num_inserted_rows", 0)
            timer.lap("silver")
            lo, dates = new.agg(F.min("event_time"), F.collect_set("event_date")).first()
            if dates:
                self.refresh_metrics(new, dates)
                timer.lap("metrics")
                self.refresh_sessions(new, lo)
                timer.lap("sessions")
            new.unpersist()
            if self.log_progress:
                print(
                    f"[refine] batch {batch_id}: {sum(counts.values())} records -> silver +{inserted}, "
                    f"quarantine {counts.get(False, 0)}, duplicates {counts.get(True, 0) - inserted} ({timer})",
                    flush=True,
                )
        finally:
            classified.unpersist()

    def path(self, table) -> str:
        return self.settings.table_path(table.name)

    def refresh_metrics(self, new: DataFrame, dates: list) -> None:
        """Recompute, from silver, every (campaign, type, minute) this batch touched."""
        spark = new.sparkSession
        keys = affected_windows(new)
        silver = lake.read(spark, self.settings, SILVER).where(F.col("event_date").isin(dates))
        scope = silver.withColumn("window_start", F.date_trunc("minute", "event_time")).join(
            keys, on=list(CAMPAIGN_MINUTE_METRICS.key), how="left_semi"
        )
        lake.upsert(
            spark,
            self.path(CAMPAIGN_MINUTE_METRICS),
            campaign_minute_metrics(scope.drop("window_start")),
            CAMPAIGN_MINUTE_METRICS.key,
            target_filter=f"t.window_date IN ({_sql_dates(dates)})",
        )

    def refresh_sessions(self, new: DataFrame, lo) -> None:
        """Recompute the sessions this batch's events can extend, join or create."""
        spark = new.sparkSession
        events = new.select("user_id", "event_time")
        current = lake.read(spark, self.settings, USER_SESSIONS).where(F.col("session_end") >= F.lit(lo) - gap())
        touched = touched_sessions(events, current).persist()
        ranges = recompute_ranges(events, touched).persist()
        first, last = ranges.agg(F.min("range_start"), F.max("range_end")).first()
        silver = lake.read(spark, self.settings, SILVER).where(
            F.col("event_date").between(F.to_date(F.lit(first)), F.to_date(F.lit(last)))
        )
        recomputed = sessionize(events_in_ranges(silver, ranges))
        lake.apply_changes(spark, self.path(USER_SESSIONS), session_changes(recomputed, touched), USER_SESSIONS.key)
        touched.unpersist()
        ranges.unpersist()
