"""The comparator for the pipeline's throughput: raw Spark reading Kafka with the same strict
reading, into Spark's no-op sink (make bench only).

    spark-submit lab/bench/raw_parse.py [--max-offsets-per-trigger N]     (lab/bench/pipeline.py)

The streaming job's read (streaming/plan.py `kafka_records`) and its reading (eo/runtime/reading.py
`classify_records` as `events_plan` calls it, poison list included, plus event_date), every
column computed and dropped: no state, no Python, no table. What is left between this and the
job is what the job adds: the engine's dedup state, the batch's trip to Arrow and the commits.
Same catch-up protocol as the job: `<reports_root>/streaming/last-catch-up.json` {seconds, records}.
"""

from __future__ import annotations

import argparse
import time

from pyspark.sql import functions as F

from eo.runtime.config import load_settings
from eo.runtime.reading import classify_records
from eo.runtime.spark import build_session
from streaming import poison
from streaming.plan import Source, kafka_records
from streaming.takeover import prepare

QUERY = "raw_parse"


def main(argv: list[str] | None = None) -> int:
    from lab.bench.unguarded import write_catch_up

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-offsets-per-trigger", type=int)
    args = parser.parse_args(argv)
    settings = load_settings()
    spark = build_session(
        f"eo-bench-{QUERY}", settings, conf={"spark.sql.streaming.numRecentProgressUpdates": "100000"}
    )
    prepare(spark, settings)
    started = time.monotonic()
    source = Source(starting_offsets="earliest", max_offsets_per_trigger=args.max_offsets_per_trigger)
    records = kafka_records(spark, settings, source)
    read = classify_records(spark, settings, records, poison.recorded(settings))
    query = (
        read.withColumn("event_date", F.to_date("event_time"))
        .writeStream.queryName(QUERY)
        .format("noop")
        .option("checkpointLocation", settings.checkpoint_path(QUERY))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    seconds = round(time.monotonic() - started, 2)
    progress = [p for p in query.recentProgress if p["numInputRows"]]
    for p in progress:
        trigger = p["durationMs"].get("triggerExecution", 0) / 1000
        print(f"[{QUERY}] batch {p['batchId']}: {p['numInputRows']} records ({trigger:.2f} s: trigger {trigger:.2f})")
    records_read = sum(p["numInputRows"] for p in progress)
    write_catch_up(settings, {"seconds": seconds, "records": records_read})
    print(f"[{QUERY}] caught up in {seconds} s: {records_read:,} records", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
