"""Event-time predicates that let Delta skip files (min/max statistics) when a micro-batch reads
back only the stretches of silver its events can affect.

A predicate only narrows what is read to a superset of the rows the exact join keeps, so it can
change how much is read but never a result.
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import Column
from pyspark.sql import functions as F

Interval = tuple[dt.datetime, dt.datetime]  # [start, end)

# Enough to keep late events' minutes apart from the live edge; few enough for a cheap plan.
MOST_INTERVALS = 32


def merged(intervals: list[Interval], most: int = MOST_INTERVALS) -> list[Interval]:
    """Sorted, with overlapping and touching ones merged; beyond `most`, the closest neighbours are
    bridged (the result then covers a little more, never less)."""
    out: list[list[dt.datetime]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    if len(out) > most:
        gaps = sorted(range(1, len(out)), key=lambda i: out[i][0] - out[i - 1][1])
        bridged = set(gaps[: len(out) - most])
        joined: list[list[dt.datetime]] = [out[0]]
        for i in range(1, len(out)):
            if i in bridged:
                joined[-1][1] = out[i][1]
            else:
                joined.append(out[i])
        out = joined
    return [(start, end) for start, end in out]


def within(column: str, intervals: list[Interval]) -> Column:
    """`column` in any of the intervals; false for none."""
    condition = F.lit(False)
    for start, end in intervals:
        condition = condition | ((F.col(column) >= F.lit(start)) & (F.col(column) < F.lit(end)))
    return condition
