"""Batch rebuild speed against log size.

Bronze of 1M..10M events written directly by Spark (producing them through Kafka would take
minutes), then the real rebuild (batch/rebuild.py) in the bench's Spark session; the scaling
exponent is the slope of log(seconds) against log(events).
"""

from __future__ import annotations

import datetime as dt
import math
import random
import shutil
import time
from pathlib import Path

from pyspark.sql import SparkSession

from batch.rebuild import rebuild
from eo.core.tables import BRONZE, GOLD, TableDef
from eo.runtime.config import Settings
from lab.bench.synthetic import bronze_log
from streaming.takeover import prepare

LOG_START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)  # bronze_log's Kafka timestamps are its event times


def fresh_lake(settings: Settings, folder: Path) -> Settings:
    shutil.rmtree(folder, ignore_errors=True)
    roots = {"lake_root": "lake", "checkpoint_root": "checkpoints", "reports_root": "reports"}
    return settings.with_overrides(**{key: str(folder / name) for key, name in roots.items()})


def rebuild_at(spark: SparkSession, settings: Settings, events: int, folder: Path, explain: bool = False) -> dict:
    """Rebuild a log of `events`; with `explain`, then explain a row of each gold table (batch/explain.py)."""
    settings = fresh_lake(settings, folder)
    prepare(spark, settings)
    started = time.monotonic()
    bronze_log(spark, events, LOG_START).write.format("delta").mode("append").save(settings.table_path(BRONZE.name))
    written = time.monotonic() - started
    stats = rebuild(spark, settings)
    point = {
        "events": stats["bronze_rows"],
        "seconds": stats["seconds"],
        "events_per_s": stats["events_per_s"],
        "bronze_write_seconds": round(written, 1),
    }
    if explain:
        point["explain"] = [explain_a_row(settings, table) for table in GOLD]
    shutil.rmtree(folder, ignore_errors=True)
    return point


def explain_a_row(settings: Settings, table: TableDef, seed: int = 7) -> dict:
    """Explain a row picked at random from the rebuilt table: its seconds, and whether it adds up."""
    from batch.explain import explain
    from eo.runtime.lineage import open_table, plain

    rows = plain(open_table(settings, table.name, "rebuild").dataset().head(1000)).to_pylist()
    row = random.Random(seed).choice(rows)
    pairs = [f"{k}={row[k].isoformat() if hasattr(row[k], 'isoformat') else row[k]}" for k in table.key]
    found = explain(settings, table.name, pairs, namespace="rebuild", history_limit=5)
    return {
        "table": table.name,
        "key": pairs,
        "seconds": found["seconds"],
        "adds_up": found["adds_up"],
        "events": len(found["events"]),
    }


def scaling_exponent(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of log(seconds) on log(events): 1.0 is linear."""
    if len(points) < 2:
        return None
    xs, ys = [math.log(n) for n, _ in points], [math.log(s) for _, s in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return round(sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs), 3)
