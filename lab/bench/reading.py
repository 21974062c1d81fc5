"""How fast records are read: the platform's strict reading against Spark's `from_json` as the floor.

    python -m lab.bench.reading [--records 1M] [--repeats 3]

Synthetic bronze records (lab/bench/synthetic.py `bronze_log`: 3% duplicates, 1% broken JSON) are
cached in memory first, so each run times the reading alone; every run writes to the noop sink.
Runs go back to back in one process and the best of `repeats` counts (this machine is shared); the
JVM's CPU time per record is given too, as it depends less on what else the machine runs.

- `from_json`: a plain 8-string schema, nothing checked (the floor any reading sits above);
- `parse_events`: the strict reading (eo/core/transforms/parse.py, the reader UDF);
- `classify`: the strict reading and the reference checks (the catalogue as a literal map), what
  the stream and the rebuild run per record.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from eo.core.reference import ad_rows, campaign_rows
from eo.core.tables import SOURCE
from eo.core.transforms.parse import Domains, classify, parse_events
from lab.bench.synthetic import bronze_log

LOG_START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
PLAIN_SCHEMA = ", ".join(f"{name} STRING" for name in SOURCE.field_names)

Reading = Callable[[DataFrame], DataFrame]


def from_json_floor(raw: DataFrame) -> DataFrame:
    return raw.select(F.from_json(F.col("value").cast("string"), PLAIN_SCHEMA).alias("j")).select("j.*")


def readings(spark: SparkSession) -> dict[str, Reading]:
    catalogue: dict[str, list[str]] = {campaign: [] for campaign, *_ in campaign_rows()}
    for ad, campaign in ad_rows():
        catalogue[campaign].append(ad)
    return {
        "from_json": from_json_floor,
        "parse_events": lambda raw: parse_events(raw, Domains()),
        "classify": lambda raw: classify(parse_events(raw, Domains()), catalogue),
    }


def jvm_cpu_seconds(spark: SparkSession) -> float:
    """CPU time of the JVM so far (local mode: driver and executors, GC and JIT included), from Linux's /proc."""
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    user, system = int(fields[11]), int(fields[12])  # utime and stime, the 14th and 15th fields
    return (user + system) / os.sysconf("SC_CLK_TCK")


def best_run(frame: DataFrame, repeats: int) -> tuple[float, float]:
    """The fastest wall time and the least JVM CPU time of `repeats` full evaluations into the noop sink."""
    walls, cpus = [], []
    for _ in range(repeats):
        began, cpu = time.perf_counter(), jvm_cpu_seconds(frame.sparkSession)
        frame.write.format("noop").mode("overwrite").save()
        walls.append(time.perf_counter() - began)
        cpus.append(jvm_cpu_seconds(frame.sparkSession) - cpu)
    return min(walls), min(cpus)


def cached_log(spark: SparkSession, records: int) -> DataFrame:
    raw = bronze_log(spark, records, LOG_START).cache()
    raw.count()
    return raw


def measure(raw: DataFrame, named: dict[str, Reading], repeats: int = 3) -> dict[str, dict]:
    """{name: {seconds, records_per_s, cpu_us_per_record, vs_from_json}} for each reading of the cached `raw`."""
    records = raw.count()
    results = {}
    for name, reading in named.items():
        seconds, cpu = best_run(reading(raw), repeats)
        results[name] = {
            "seconds": round(seconds, 3),
            "records_per_s": round(records / seconds),
            "cpu_us_per_record": round(cpu * 1e6 / records, 2),
        }
    floor = results.get("from_json", {}).get("seconds")
    for result in results.values():
        if floor:
            result["vs_from_json"] = round(result["seconds"] / floor, 2)
    return results


def bench_reading(spark: SparkSession, records: int = 1_000_000, repeats: int = 3) -> dict:
    """What `make bench` can call: the readings of `records` synthetic records, best of `repeats`."""
    raw = cached_log(spark, records)
    try:
        return {"records": records, "repeats": repeats, "readings": measure(raw, readings(spark), repeats)}
    finally:
        raw.unpersist()


def main(argv: list[str] | None = None) -> int:
    from eo.runtime.config import load_settings
    from eo.runtime.spark import build_session
    from lab.bench.sizes import count

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=count, default=1_000_000, help="e.g. 1M, 500k")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    spark = build_session("eo-bench-reading", load_settings())
    try:
        print(json.dumps(bench_reading(spark, args.records, args.repeats), indent=2))
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
