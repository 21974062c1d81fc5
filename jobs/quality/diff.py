"""Row-by-row, exact comparison of a streamed table with its batch recomputation."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

STATUSES = ("match", "missing", "extra", "different")


def table_diff(stream: DataFrame, batch: DataFrame, key: Sequence[str]) -> DataFrame:
    """One row per key of either side, with `status`:

    match: both sides have the key with identical values (decimals compared exactly);
    missing: only batch has it (the stream lost it); extra: only the stream has it;
    different: both have it, with other values.
    """
    key = list(key)
    values = [c for c in batch.columns if c not in key]
    s = stream.select(*key, F.struct(*values).alias("stream"))
    b = batch.select(*key, F.struct(*values).alias("batch"))
    status = (
        F.when(F.col("stream").isNull(), "missing")
        .when(F.col("batch").isNull(), "extra")
        .when(~F.col("stream").eqNullSafe(F.col("batch")), "different")
        .otherwise("match")
    )
    return s.join(b, on=key, how="full_outer").withColumn("status", status)


def diff_counts(diff: DataFrame) -> dict[str, int]:
    """stream_rows, batch_rows and one count per non-matching status."""
    counts = {s: 0 for s in STATUSES}
    counts.update({r.status: r["count"] for r in diff.groupBy("status").count().collect()})
    return {
        "stream_rows": counts["match"] + counts["different"] + counts["extra"],
        "batch_rows": counts["match"] + counts["different"] + counts["missing"],
        "missing": counts["missing"],
        "extra": counts["extra"],
        "different": counts["different"],
    }
