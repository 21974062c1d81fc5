"""Row-by-row, exact comparison of a streamed table with its batch recomputation."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType

STATUSES = ("match", "missing", "extra", "different")
STREAM, BATCH = "stream_", "batch_"


def value_columns(batch: DataFrame, key: Sequence[str]) -> list[str]:
    return [c for c in batch.columns if c not in key]


def _comparable(frame: DataFrame, column: str) -> Column:
    """A column as the two sides are compared: a list (user_sessions' metric_keys) as its JSON
    text, which Great Expectations compares as a value (the lists are sorted on both sides)."""
    if isinstance(frame.schema[column].dataType, ArrayType):
        return F.to_json(F.col(column))
    return F.col(column)


def table_diff(stream: DataFrame, batch: DataFrame, key: Sequence[str]) -> DataFrame:
    """One row per key of either side, the two sides' values next to each other:

    the key columns; `in_stream` and `in_batch` (1 when that side has the key, else 0);
    `stream_<column>` and `batch_<column>` for every other column, which Great Expectations
    compares column by column; and `status`:
    match: both sides have the key with identical values (decimals compared exactly);
    missing: only batch has it (the stream lost it); extra: only the stream has it;
    different: both have it, with other values.
    """
    key = list(key)
    values = value_columns(batch, key)
    s = stream.select(*key, F.lit(1).alias("in_stream"), *[_comparable(stream, c).alias(STREAM + c) for c in values])
    b = batch.select(*key, F.lit(1).alias("in_batch"), *[_comparable(batch, c).alias(BATCH + c) for c in values])
    same = F.lit(True)
    for c in values:
        same = same & F.col(STREAM + c).eqNullSafe(F.col(BATCH + c))
    joined = s.join(b, on=key, how="full_outer").fillna(0, subset=["in_stream", "in_batch"])
    status = (
        F.when(F.col("in_stream") == 0, "missing")
        .when(F.col("in_batch") == 0, "extra")
        .when(~same, "different")
        .otherwise("match")
    )
    return joined.select(
        *key, "in_stream", "in_batch", *[F.col(p + c) for c in values for p in (STREAM, BATCH)], status.alias("status")
    )


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
