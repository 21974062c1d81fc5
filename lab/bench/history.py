"""Is a micro-batch's cost independent of the history behind it?

In this design a batch's work that could grow with history is (streaming/plan.py,
streaming/microbatch.py): the engine's dedup state (every event id ever accepted, RocksDB), the
gold rows its commits merge into (metrics accumulate on the dates the batch touches; sessions
merge with, and distinct users are counted against, the stored sessions its events can reach),
and the tables' logs.
So, for each history size H, on a fresh lake:

1. silver gets H valid, distinct events ending where the new events start (same density: a
   longer history is more days), and gold gets their metrics and sessions from the shared batch
   arithmetic (eo/core/transforms/, as the rebuild computes them);
2. the seed gets silver's ids (ops/reset.py `write_seed`), and the job (spark-submit,
   --until-caught-up) reads them into its engine state as after a `streaming reset`, its topic
   still empty: the state holds H ids;
3. the same new events are loaded into the topic, and the job, restarted on that checkpoint,
   streams them in batches of the same size; their users continue the history's sessions.

Two runs, because the seed read and a batch size do not go together yet: the job holds Kafka
back while it reads the seed with minOffsetsPerTrigger 2^62, which Spark refuses next to
--max-offsets-per-trigger (streaming/query.py `read_seed`). The second run is a restart, so its
first batch also loads the state; the figure is the median of the job's own per-batch seconds
(its log lines) with the long history over the short one. Bronze holds no history (a batch
only appends to it).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession

from eo.core.gold import DECLARED
from eo.core.tables import SILVER
from eo.core.transforms.rules import rows_of
from eo.runtime import lake
from eo.runtime.config import Settings
from lab.bench import job_log
from lab.bench.scaling import fresh_lake
from lab.bench.spark_submit import Submitter
from lab.bench.synthetic import PER_DAY, silver_history
from ops.reset import write_seed
from streaming.takeover import prepare


def history_end(new_events: int) -> dt.datetime:
    """Where the history ends and the new events start: the new events end before today."""
    today = dt.datetime.now(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return today - dt.timedelta(days=-(-new_events // PER_DAY) + 1)


def prefill(spark: SparkSession, settings: Settings, events: int, end: dt.datetime) -> dict:
    """Silver, gold and the seed of a history of about `events` events ending at `end`."""
    began = time.monotonic()
    prepare(spark, settings)
    silver_history(spark, events, end).write.format("delta").mode("append").save(settings.table_path(SILVER.name))
    silver = lake.read(spark, settings, SILVER)
    gold = {name: rows_of(table, silver) for name, table in DECLARED.items()}
    for name, rows in gold.items():
        rows.write.format("delta").mode("append").save(settings.table_path(name))
    seeded = write_seed(spark, settings)
    return {"history_events": seeded, "prefill_seconds": round(time.monotonic() - began, 1)}


def run_with_history(
    spark: SparkSession,
    submitter: Submitter,
    topic: Settings,
    events: int,
    end: dt.datetime,
    batch: int,
    folder: Path,
    log: Path,
    load_new_events: Callable[[Settings], None],
) -> dict:
    """Prefill a history of `events` in a fresh lake in `folder` and read it into the job's state
    (`topic` empty), then `load_new_events(topic)` and stream them (the job's output into `log`)."""
    settings = fresh_lake(topic, folder)
    figures = prefill(spark, settings, events, end)
    began = time.monotonic()
    submitter.run("jobs/stream.py", ["run", "--until-caught-up"], settings, log)
    seed_run = round(time.monotonic() - began, 1)
    load_new_events(settings)
    submitter.run(
        "jobs/stream.py", ["run", "--until-caught-up", "--max-offsets-per-trigger", str(batch)], settings, log
    )
    text = log.read_text(errors="replace")
    batches = job_log.busy_batches(text)
    return {
        **figures,
        "seed_read_seconds": job_log.seed_seconds(text),
        "seed_run_wall_seconds": seed_run,
        "batches": batches,
        "batch_seconds": [b["seconds"] for b in batches],
        "first_batch_s": batches[0]["seconds"] if batches else None,
        "median_batch_s": job_log.median_seconds(batches),
        "log": str(log),
    }


def history_ratio(runs: list[dict]) -> float | None:
    """Median batch seconds with the longest history / with the shortest."""
    if len(runs) < 2 or not runs[0]["median_batch_s"] or runs[-1]["median_batch_s"] is None:
        return None
    return round(runs[-1]["median_batch_s"] / runs[0]["median_batch_s"], 3)
