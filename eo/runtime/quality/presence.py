"""Whether event-time intervals hold any row, from the Delta logs alone: no Spark, no data read.

An interval with no row on either side (the stream's gold and silver, the rebuild's gold) has
nothing to compare: verification answers it from here, without starting a Spark driver. A file
counts as possibly holding rows of an interval when its partition is one of the interval's days
and its range column's statistics overlap it; a file without statistics always counts (so the
answer "no rows" is never a guess).
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.compute as pc

from eo.core.intervals import Interval
from eo.core.tables import EVENT_TIME, GOLD, SILVER, TableDef
from eo.runtime.config import Settings
from eo.runtime.environment import environment

# Delta's statistics keep times to the millisecond: a maximum may sit up to 1 ms below the value.
STATS_SLACK = dt.timedelta(milliseconds=1)
# Where rows of an interval can be: (table, namespace, its event-time column): every declared
# gold table on both sides, by its range column, and the stream's silver.
CHECKED = (
    *((table, "main", table.range_column) for table in GOLD),
    (SILVER, "main", EVENT_TIME),
    *((table, "rebuild", table.range_column) for table in GOLD),
)


def holding_rows(settings: Settings, intervals: list[Interval]) -> list[str]:
    """The tables ("<gold table> (rebuild)") whose files may hold rows in `intervals`:
    none means every one surely holds none."""
    return [
        f"{table.name} ({namespace})"
        for table, namespace, column in CHECKED
        if _may_hold(settings, table, namespace, column, intervals)
    ]


def _may_hold(settings: Settings, table: TableDef, namespace: str, column: str, intervals: list[Interval]) -> bool:
    from deltalake.exceptions import TableNotFoundError

    try:
        files = pa.table(environment(settings).table(table.name, namespace).refresh().get_add_actions(flatten=True))
    except (TableNotFoundError, FileNotFoundError):
        return False  # no table: no rows
    if files.num_rows == 0:
        return False
    if "num_records" in files.column_names:
        files = files.filter(pc.fill_null(pc.not_equal(files["num_records"], 0), True))
    return any(_overlaps(row, table, column, interval) for row in files.to_pylist() for interval in intervals)


def _overlaps(row: dict, table: TableDef, column: str, interval: Interval) -> bool:
    partition = table.partition_by[0] if table.partition_by else None
    day = row.get(f"partition.{partition}") if partition else None
    if day is not None:
        day = dt.date.fromisoformat(str(day)[:10])
        last = (interval.end - dt.timedelta(microseconds=1)).date()
        if not interval.start.date() <= day <= last:
            return False
    low, high = row.get(f"min.{column}"), row.get(f"max.{column}")
    if low is None or high is None:
        return True  # no statistics: it may
    low, high = (_utc(t) for t in (low, high))
    return low < interval.end and high + STATS_SLACK >= interval.start


def _utc(value: dt.datetime) -> dt.datetime:
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)
