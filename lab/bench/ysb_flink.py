"""The YSB query in PyFlink, exactly-once: run by .cache/flink-venv/bin/python, never imported.

Kafka (bounded: from the earliest offset to the latest at start) -> keep views -> 10-second
tumbling event-time windows per ad -> join ad -> campaign -> filesystem sink (CSV).
Checkpoints are EXACTLY_ONCE on the local filesystem, and the file sink only publishes files a
checkpoint committed. Prints one JSON line at the end: seconds of the job, rows written.
This venv lacks the repo's packages, so the script stands alone.
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--ads", required=True, help="CSV without header: ad_id,campaign_id")
    parser.add_argument("--output", required=True)
    parser.add_argument("--checkpoints", required=True)
    parser.add_argument("--jars", required=True)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--checkpoint-interval-s", type=int, default=5)
    args = parser.parse_args()

    from pyflink.table import EnvironmentSettings, TableEnvironment
    from pyflink.version import __version__ as flink_version

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    conf = env.get_config()
    jars = ";".join(p.resolve().as_uri() for p in sorted(Path(args.jars).glob("*.jar")))
    for key, value in {
        "pipeline.jars": jars,
        "parallelism.default": str(args.parallelism),
        "execution.checkpointing.interval": f"{args.checkpoint_interval_s} s",
        "execution.checkpointing.mode": "EXACTLY_ONCE",
        "execution.checkpointing.dir": Path(args.checkpoints).resolve().as_uri(),
        "state.backend.type": "hashmap",
        "table.exec.source.idle-timeout": "1 s",
        "table.local-time-zone": "UTC",
    }.items():
        conf.set(key, value)

    env.execute_sql(f"""
        CREATE TABLE events (
            ad_id STRING, event_type STRING, event_time BIGINT,
            ts AS TO_TIMESTAMP_LTZ(event_time, 3),
            WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
        ) WITH (
            'connector' = 'kafka', 'topic' = '{args.topic}',
            'properties.bootstrap.servers' = '{args.bootstrap}',
            'properties.group.id' = 'ysb-flink-{uuid.uuid4().hex[:8]}',
            'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
            'format' = 'json'
        )""")
    env.execute_sql(f"""
        CREATE TABLE ads (ad_id STRING, campaign_id STRING)
        WITH ('connector' = 'filesystem', 'path' = '{Path(args.ads).resolve().as_uri()}', 'format' = 'csv')""")
    env.execute_sql(f"""
        CREATE TABLE counts (campaign_id STRING, window_start BIGINT, view_count BIGINT)
        WITH ('connector' = 'filesystem', 'path' = '{Path(args.output).resolve().as_uri()}', 'format' = 'csv')""")
    started = time.monotonic()
    # Windows per ad, then the join: a regular join drops the time attribute, so counting per
    # campaign after it would make an updating stream the file sink cannot take. Each row is one
    # ad's views in a window, with its campaign; the reader adds an ad's rows up per campaign.
    env.execute_sql("""
        INSERT INTO counts
        SELECT a.campaign_id, w.window_ms, w.view_count
        FROM (
            SELECT ad_id, UNIX_TIMESTAMP(DATE_FORMAT(window_start, 'yyyy-MM-dd HH:mm:ss')) * 1000 AS window_ms,
                   COUNT(*) AS view_count
            FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '10' SECOND))
            WHERE event_type = 'view'
            GROUP BY ad_id, window_start, window_end
        ) w JOIN ads a ON w.ad_id = a.ad_id""").wait()
    seconds = time.monotonic() - started
    rows = sum(1 for f in Path(args.output).rglob("*") if f.is_file() and not f.name.startswith(".") for _ in f.open())
    print(json.dumps({"seconds": round(seconds, 2), "rows": rows, "flink_version": flink_version}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
