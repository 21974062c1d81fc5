"""Batch rebuild speed against log size, and micro-batch cost against history size.

- rebuild: bronze of 1M..50M events written directly (producing 50M through Kafka alone would take
  ~14 min), then the real rebuild (batch/rebuild.py) in this process; the scaling exponent is the
  slope of log(seconds) against log(events).
- history: silver pre-filled with a short or a long history (same density: a longer history is
  more days), then the real refine query over the same new events; the median micro-batch takes
  as long either way if deduplication reads only the days a batch touches.
"""

from __future__ import annotations

import datetime as dt
import math
import shutil
import time
from pathlib import Path

from pyspark.sql import SparkSession

from batch.rebuild import rebuild
from jobs.config import Settings
from jobs.tables import BRONZE
from lab.bench.synthetic import bronze_log
from streaming.run import prepare

LOG_START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
HISTORY_END = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)  # where the producer's clickstream starts


def fresh_lake(settings: Settings, folder: Path) -> Settings:
    shutil.rmtree(folder, ignore_errors=True)
    roots = {"lake_root": "lake", "checkpoint_root": "checkpoints", "reports_root": "reports"}
    return settings.with_overrides(**{key: str(folder / name) for key, name in roots.items()})


def rebuild_at(spark: SparkSession, settings: Settings, events: int, folder: Path) -> dict:
    settings = fresh_lake(settings, folder)
    prepare(spark, settings)
    started = time.monotonic()
    bronze_log(spark, events, LOG_START).write.format("delta").mode("append").save(settings.table_path(BRONZE.name))
    written = time.monotonic() - started
    stats = rebuild(spark, settings)
    shutil.rmtree(folder, ignore_errors=True)
    return {
        "events": stats["bronze_rows"],
        "seconds": stats["seconds"],
        "events_per_s": stats["events_per_s"],
        "bronze_write_seconds": round(written, 1),
    }


def scaling_exponent(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of log(seconds) on log(events): 1.0 is linear."""
    if len(points) < 2:
        return None
    xs, ys = [math.log(n) for n, _ in points], [math.log(s) for _, s in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return round(sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs), 3)
