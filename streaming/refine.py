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


@dataclass
class RefineBatch:
    """The foreachBatch function of the refine query."""

    settings: Settings
    log_progress: bool = True

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        started = time.monotonic()
        spark = batch.sparkSession
        batch = batch.persist()
        try:
            input_rows = batch.count()
            if input_rows == 0:
                return
            campaigns = lake.read(spark, self.settings, CAMPAIGNS)
            classified = classify(parse_events(batch), campaigns).persist()
            quarantined = lake.insert_missing(spark, self.path(QUARANTINE), quarantine_rows(classified), QUARANTINE.key)
            new = first_copies(valid_events(classified)).persist()
            inserted = lake.insert_missing(spark, self.path(SILVER), new, SILVER.key)
            self.refresh_metrics(new)
            self.refresh_sessions(new)
            classified.unpersist()
            new.unpersist()
            if self.log_progress:
                print(
                    f"[refine] batch {batch_id}: {input_rows} records -> silver "
                    f"+{inserted.get('num_inserted_rows', '?')}, quarantine "
                    f"+{quarantined.get('num_inserted_rows', '?')} "
                    f"({time.monotonic() - started:.1f} s)",
                    flush=True,
                )
        finally:
            batch.unpersist()

    def path(self, table) -> str:
        return self.settings.table_path(table.name)

    def refresh_metrics(self, new: DataFrame) -> None:
        spark = new.sparkSession
        keys = affected_windows(new).withColumn("window_date", F.to_date("window_start")).persist()
        dates = [r.window_date for r in keys.select("window_date").distinct().collect()]
        if not dates:
            keys.unpersist()
            return
        silver = lake.read(spark, self.settings, SILVER).where(F.col("event_date").isin(dates))
        scope = silver.withColumn("window_start", F.date_trunc("minute", "event_time")).join(
            F.broadcast(keys.drop("window_date")), on=list(CAMPAIGN_MINUTE_METRICS.key), how="left_semi"
        )
        recomputed = campaign_minute_metrics(scope.drop("window_start"))
        lake.upsert(
            spark,
            self.path(CAMPAIGN_MINUTE_METRICS),
            recomputed,
            CAMPAIGN_MINUTE_METRICS.key,
            target_filter=f"t.window_date IN ({_sql_dates(dates)})",
        )
        keys.unpersist()

    def refresh_sessions(self, new: DataFrame) -> None:
        spark = new.sparkSession
        events = new.select("user_id", "event_time")
        lo = events.agg(F.min("event_time")).first()[0]
        if lo is None:
            return
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
