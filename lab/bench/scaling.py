"""Batch rebuild speed against log size.

Bronze of 1M..10M events written directly by Spark (producing them through Kafka would take
minutes), then the real rebuild (batch/rebuild.py) in the bench's Spark session; the scaling
exponent is the slope of log(seconds) against log(events).
"""

from __future__ import annotations

import datetime as dt
import math
import shutil
import time
from pathlib import Path

from pyspark.sql import SparkSession

from batch.rebuild import rebuild
from eo.core.tables import BRONZE
from eo.runtime.config import Settings
from lab.bench.synthetic import bronze_log
from streaming.takeover import prepare

LOG_START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)  # bronze_log's Kafka timestamps are its event times


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
