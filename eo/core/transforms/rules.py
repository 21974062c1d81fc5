"""The merge rules' batch executions: a declared gold table over all of silver (the rebuild).

A declaration may name its own (`GoldTable.rebuild`, which must apply its transform); else an
additive table is its transform per Spark partition, added up by key in Spark, exactly (decimals
summed at Spark's wider precision and cast back: an overflow fails, never rounds).
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from eo.core.declaration import GoldTable, Sessions, added_up, column_types
from eo.core.intervals import Interval
from eo.core.tables import EVENT_TIME


def rows_of(table: GoldTable, silver: DataFrame) -> DataFrame:
    """The table's rows from `silver` (every event of every key in it)."""
    if table.rebuild is not None:
        return table.rebuild(silver)
    if isinstance(table.merge, Sessions):
        raise ValueError(f"{table.name}: a Sessions table needs its batch execution (rebuild=...)")

    def partial(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        received = list(batches)
        if received:
            yield from added_up(table, table.transform(pa.Table.from_batches(received))).to_batches()

    types = column_types(table.columns)
    sums = silver.mapInArrow(partial, table.columns).groupBy(*table.key)
    others = [c for c in types if c not in table.key and c not in table.merge.values]
    summed = sums.agg(
        *(F.sum(c).cast(types[c]).alias(c) for c in table.merge.values), *(F.min(c).alias(c) for c in others)
    )
    return summed.select(*types)


def rows_in(table: GoldTable, silver: DataFrame, interval: Interval, before, after) -> DataFrame:
    """The table's rows whose range column falls in `interval`, from only the events that can make
    them: from `before` ahead of its start to `after` past its end (None: any time later)."""
    since = F.col(EVENT_TIME) >= F.lit(interval.start - before)
    events = silver.where(since if after is None else since & (F.col(EVENT_TIME) < F.lit(interval.end + after)))
    return rows_of(table, events).where(F.expr(interval.predicate(table.range_column)))
