"""Kafka -> bronze, one foreachBatch call per micro-batch.

The records are inserted if their source coordinates (topic, partition, offset) are not in
bronze yet: idempotent under any replay, even from a reset checkpoint. Offsets only grow per
partition, so the MERGE reads only the files whose offsets can overlap (data skipping), and
bronze's size does not slow it down. The write carries the fencing transaction id.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs import faults, lake
from jobs.config import Settings
from jobs.fencing import Fence
from jobs.tables import BRONZE


def offset_filter(ranges: list) -> str:
    """A target-only predicate: the bronze rows that can share coordinates with this batch."""
    return " OR ".join(
        f"(t.kafka_topic = '{r.kafka_topic}' AND t.kafka_partition = {r.kafka_partition} "
        f"AND t.kafka_offset >= {r.first})"
        for r in ranges
    )


@dataclass
class IngestBatch:
    settings: Settings
    fence: Fence | None = None
    log_progress: bool = True

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        if self.fence:
            self.fence.check()
        started = time.monotonic()
        records = batch.persist()
        try:
            ranges = (
                records.groupBy("kafka_topic", "kafka_partition")
                .agg(F.min("kafka_offset").alias("first"), F.count(F.lit(1)).alias("n"))
                .collect()
            )
            if not ranges:
                return
            txn = (self.fence.job, self.fence.version(batch_id)) if self.fence else None
            lake.insert_missing(
                batch.sparkSession,
                self.settings.table_path(BRONZE.name),
                records,
                BRONZE.key,
                target_filter=offset_filter(ranges),
                txn=txn,
            )
            faults.point("ingest.after_delta_commit")
            if self.log_progress:
                print(
                    f"[ingest] batch {batch_id}: {sum(r.n for r in ranges)} records "
                    f"({time.monotonic() - started:.1f} s)",
                    flush=True,
                )
        finally:
            records.unpersist()
