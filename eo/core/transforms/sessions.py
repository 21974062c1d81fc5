"""Gold table 2: user sessions, closed by 30 minutes of inactivity (event time).

An event at least SESSION_GAP after the previous one of the same user starts a new session.

One definition, two executions (DESIGN.md): `sessionize` merges *intervals* (an event is an
interval of one instant; a session is one of its first and last event). The batch rebuild gives
it every event of a user (`user_sessions`, with Spark's applyInArrow); the stream gives it a
micro-batch's new events together with the stored sessions they can reach (`near`,
`merged_with`: the merged sessions, and the stored ones they replace). Both are exact: a session
is determined by the intervals it joins, so merging a stored session with new events gives the
same session as recomputing it from all of its events, whatever the lateness. For the same
reason the stream's tasks may sessionize their own events first: the users' owners merge
intervals, not events (streaming/session_merge.py).
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from eo.core.tables import SESSION_GAP_MINUTES, USER_SESSIONS
from eo.core.transforms.metrics import REVENUE, purchase_revenue

GAP = dt.timedelta(minutes=SESSION_GAP_MINUTES)
SESSION_KEY = list(USER_SESSIONS.key)
GROUPS = 16  # user groups per batch rebuild: each one a call of sessionize
TIME = pa.timestamp("us", tz="UTC")
INTERVALS = pa.schema(
    [("user_id", pa.string()), ("start", TIME), ("end", TIME), ("events", pa.int64()), ("revenue", REVENUE)]
)


def as_intervals(events: pa.Table) -> pa.Table:
    """Events (user_id, event_time, event_type, price) as intervals of one instant."""
    times = events["event_time"].cast(TIME)
    return pa.table(
        {
            "user_id": events["user_id"],
            "start": times,
            "end": times,
            "events": pa.array(np.ones(events.num_rows, dtype=np.int64)),
            "revenue": pc.cast(purchase_revenue(events), REVENUE),
        },
        schema=INTERVALS,
    )


def sessions_as_intervals(sessions: pa.Table) -> pa.Table:
    return pa.table(
        {
            "user_id": sessions["user_id"],
            "start": sessions["session_start"].cast(TIME),
            "end": sessions["session_end"].cast(TIME),
            "events": sessions["events"].cast(pa.int64()),
            "revenue": sessions["revenue"].cast(REVENUE),
        },
        schema=INTERVALS,
    )


def _session_numbers(users: pa.ChunkedArray, starts: pa.ChunkedArray, ends: pa.ChunkedArray) -> pa.Array:
    """For intervals sorted by (user, start): the number of the session each one belongs to.

    An interval opens a new session when it starts at least GAP after every earlier interval of
    the same user has ended (for instants: the previous event)."""
    frame = pd.DataFrame(
        {
            "user": pc.dictionary_encode(users).combine_chunks().indices.to_numpy(zero_copy_only=False),
            "start": starts.cast(pa.int64()).to_numpy(),
            "end": ends.cast(pa.int64()).to_numpy(),
        }
    )
    reached = frame.groupby("user", sort=False)["end"].cummax().groupby(frame["user"], sort=False).shift(1)
    gap_us = int(GAP.total_seconds() * 1_000_000)
    opens = reached.isna() | (frame["start"] >= reached + gap_us)
    return pa.array(opens.cumsum().to_numpy())


def sessionize(intervals: pa.Table) -> pa.Table:
    """Intervals -> the sessions they make, in user_sessions' shape."""
    if intervals.num_rows == 0:
        return USER_SESSIONS_SCHEMA.empty_table()
    ordered = intervals.take(pc.sort_indices(intervals, [("user_id", "ascending"), ("start", "ascending")]))
    numbered = ordered.append_column("_session", _session_numbers(ordered["user_id"], ordered["start"], ordered["end"]))
    merged = numbered.group_by(["user_id", "_session"]).aggregate(
        [("start", "min"), ("end", "max"), ("events", "sum"), ("revenue", "sum")]
    )
    return pa.table(
        {
            "user_id": merged["user_id"],
            "session_start": merged["start_min"],
            "session_end": merged["end_max"],
            "session_date": pc.cast(merged["start_min"], pa.date32()),
            "events": merged["events_sum"],
            "revenue": pc.cast(merged["revenue_sum"], REVENUE),
        },
        schema=USER_SESSIONS_SCHEMA,
    )


def near(sessions: pa.Table, intervals: pa.Table) -> pa.Table:
    """The stored sessions that new intervals of the same user can extend or join: those ending no
    more than GAP before the user's first new instant and starting no more than GAP after the last."""
    if sessions.num_rows == 0 or intervals.num_rows == 0:
        return sessions.slice(0, 0)
    bounds = intervals.group_by("user_id").aggregate([("start", "min"), ("end", "max")])
    joined = sessions.join(bounds, "user_id", join_type="inner")
    gap = pa.scalar(GAP, pa.duration("us"))
    reach = pc.and_(
        pc.greater_equal(joined["session_end"], pc.subtract(joined["start_min"], gap)),
        pc.less_equal(joined["session_start"], pc.add(joined["end_max"], gap)),
    )
    return joined.filter(reach).select(sessions.column_names)


def merged_with(stored: pa.Table, intervals: pa.Table) -> tuple[pa.Table, pa.Table]:
    """The sessions new intervals make with the stored sessions they reach, and those stored
    sessions: each one is replaced, by a merged session of the same key or joined into another."""
    touched = near(stored, intervals)
    merged = sessionize(pa.concat_tables([intervals.cast(INTERVALS), sessions_as_intervals(touched)]))
    return merged, touched


def _sessions_of_group(events: pa.Table) -> pa.Table:
    return sessionize(as_intervals(events))


def user_sessions(events: DataFrame) -> DataFrame:
    """The batch execution: every user's events in one group, `sessionize` per group."""
    columns = events.select("user_id", "event_time", "event_type", "price")
    group = F.pmod(F.xxhash64("user_id"), F.lit(GROUPS))
    return columns.groupBy(group.alias("_group")).applyInArrow(
        lambda _key, table: _sessions_of_group(table), USER_SESSIONS.ddl
    )


USER_SESSIONS_SCHEMA = pa.schema(
    [
        ("user_id", pa.string()),
        ("session_start", TIME),
        ("session_end", TIME),
        ("session_date", pa.date32()),
        ("events", pa.int64()),
        ("revenue", REVENUE),
    ]
)
