"""The same pipeline with its guarantees switched off: the baseline that prices them.

Used only by `make bench` (`python -m streaming run --no-guarantees`). Every write is a plain
append: no transaction ids, no insert-if-missing, no deduplication, and gold gets each batch's
own partial aggregates instead of keys recomputed from silver. A replayed batch or a duplicate
event is therefore counted twice, and late events split windows and sessions: gold is NOT exact.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame

from jobs.config import Settings
from jobs.reading import classify_records
from jobs.tables import BRONZE, CAMPAIGN_MINUTE_METRICS, QUARANTINE, SILVER, USER_SESSIONS
from jobs.transforms.metrics import campaign_minute_metrics
from jobs.transforms.parse import quarantine_rows, valid_events
from jobs.transforms.sessions import sessionize


def _append(rows: DataFrame, path: str) -> None:
    rows.write.format("delta").mode("append").save(path)


@dataclass
class UnguardedIngest:
    settings: Settings

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        _append(batch, self.settings.table_path(BRONZE.name))


@dataclass
class UnguardedRefine:
    settings: Settings

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        path = self.settings.table_path
        classified = classify_records(batch.sparkSession, self.settings, batch).persist()
        try:
            _append(quarantine_rows(classified), path(QUARANTINE.name))
            events = valid_events(classified).persist()
            _append(events, path(SILVER.name))
            _append(campaign_minute_metrics(events), path(CAMPAIGN_MINUTE_METRICS.name))
            _append(sessionize(events), path(USER_SESSIONS.name))
            events.unpersist()
        finally:
            classified.unpersist()
