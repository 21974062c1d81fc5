"""Gold table 2: user sessions, closed by 30 minutes of inactivity (event time).

An event at least SESSION_GAP after the previous one of the same user starts a new session.

One definition, two executions (docs/design.md): `sessionize` merges *intervals* (an event is an
interval of one instant; a session is one of its first and last event). The batch rebuild gives
it every event of a user (`user_sessions`, with Spark's applyInArrow); the stream gives it a
micro-batch's new events together with the stored sessions they can reach (`near`,
`merged_with`: the merged sessions, and the stored ones they replace). Both are exact: a session
is determined by the intervals it joins, so merging a stored session with new events gives the
same session as recomputing it from all of its events, whatever the lateness. For the same
reason the stream's tasks may sessionize their own events first: the users' owners merge
intervals, not events (streaming/session_merge.py).

Each session also keeps `metric_keys`: the campaign_minute_metrics keys its events count the user
in. A user is new to a minute's distinct users exactly when none of the user's stored sessions
holds the key, and every stored event in the same minute as a new one is within the gap of it:
the stored sessions a batch merges with are the only ones to look at (`new_user_tuples`).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from eo.core.optional import module

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

from eo.core.tables import SESSION_GAP_MINUTES
from eo.core.transforms.metrics import METRIC_KEY, REVENUE, purchase_revenue, window_start

# Not on Airflow on MWAA, which reads the declarations and calls none of this (eo/core/optional.py).
np = module("numpy")
pd = module("pandas")
F = module("pyspark.sql.functions")

GAP = dt.timedelta(minutes=SESSION_GAP_MINUTES)
NAME = "user_sessions"  # declared in eo/core/gold/user_sessions.py
SESSION_KEY = ["user_id", "session_start"]
COLUMNS = (
    "user_id STRING, session_start TIMESTAMP, session_end TIMESTAMP, session_date DATE, "
    "events BIGINT, revenue DECIMAL(18,2), metric_keys ARRAY<STRING>"
)
GROUPS = 16  # user groups per batch rebuild: each one a call of sessionize
TIME = pa.timestamp("us", tz="UTC")
METRIC_KEYS = pa.list_(pa.string())
MINUTE_TEXT = "%Y-%m-%dT%H:%M"  # a metric key's minute, UTC
INTERVALS = pa.schema(
    [
        ("user_id", pa.string()),
        ("start", TIME),
        ("end", TIME),
        ("events", pa.int64()),
        ("revenue", REVENUE),
        ("metric_keys", METRIC_KEYS),
    ]
)


def metric_key_texts(events: pa.Table) -> pa.ChunkedArray:
    """Each event's campaign_minute_metrics key as one string: "campaign|type|minute"."""
    # A batch's events fall in few minutes: each is formatted once, not per event
    # (docs/history/hot-path-journal.md).
    minutes = pc.dictionary_encode(_flat(window_start(events["event_time"].cast(TIME))))
    minute = pc.strftime(minutes.dictionary, format=MINUTE_TEXT).take(minutes.indices)
    return pc.binary_join_element_wise(events["campaign_id"], events["event_type"], minute, "|")


def metric_keys_of_texts(texts: pa.Array | pa.ChunkedArray) -> pa.Table:
    """Metric keys as strings -> METRIC_KEY columns (a campaign may hold "|": split from the right)."""
    parts = pc.split_pattern(texts, "|", max_splits=2, reverse=True)
    minutes = pc.dictionary_encode(_flat(pc.list_element(parts, 2)))  # few minutes: each parsed once
    minute = pc.strptime(minutes.dictionary, format=MINUTE_TEXT, unit="us").take(minutes.indices)
    return pa.table(
        {
            "campaign_id": pc.list_element(parts, 0),
            "event_type": pc.list_element(parts, 1),
            "window_start": minute.cast(TIME),
        }
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
            "metric_keys": _one_each(metric_key_texts(events)),
        },
        schema=INTERVALS,
    )


def _flat(values: pa.ChunkedArray | pa.Array) -> pa.Array:
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values


def _one_each(values: pa.ChunkedArray) -> pa.ListArray:
    """A list of one value per value."""
    flat = _flat(values)
    return pa.ListArray.from_arrays(pa.array(np.arange(len(flat) + 1, dtype=np.int32)), flat)


def sessions_as_intervals(sessions: pa.Table) -> pa.Table:
    return pa.table(
        {
            "user_id": sessions["user_id"],
            "start": sessions["session_start"].cast(TIME),
            "end": sessions["session_end"].cast(TIME),
            "events": sessions["events"].cast(pa.int64()),
            "revenue": sessions["revenue"].cast(REVENUE),
            "metric_keys": sessions["metric_keys"].cast(METRIC_KEYS),
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
    # Sorted without the key lists: a stored session's list can hold hundreds of keys, and the
    # lists are only ever grouped (by the session number each interval gets back).
    narrow = intervals.select(["user_id", "start", "end", "events", "revenue"])
    order = pc.sort_indices(narrow, [("user_id", "ascending"), ("start", "ascending")])
    ordered = narrow.take(order)
    numbers = _session_numbers(ordered["user_id"], ordered["start"], ordered["end"])
    numbered = ordered.append_column("_session", numbers)
    merged = numbered.group_by(["user_id", "_session"]).aggregate(
        [("start", "min"), ("end", "max"), ("events", "sum"), ("revenue", "sum")]
    )
    session_of = np.empty(intervals.num_rows, dtype=np.int64)
    session_of[order.to_numpy()] = numbers.to_numpy()
    keys = _keys_by_session(session_of, _flat(intervals["metric_keys"]))
    return pa.table(
        {
            "user_id": merged["user_id"],
            "session_start": merged["start_min"],
            "session_end": merged["end_max"],
            "session_date": pc.cast(merged["start_min"], pa.date32()),
            "events": merged["events_sum"],
            "revenue": pc.cast(merged["revenue_sum"], REVENUE),
            "metric_keys": keys.take(pc.subtract(merged["_session"], 1)),
        },
        schema=USER_SESSIONS_SCHEMA,
    )


def _keys_by_session(sessions: np.ndarray, keys: pa.ListArray) -> pa.ListArray:
    """For sessions numbered 1..n (`sessions`, one per interval) and each interval's metric keys:
    session i's keys at position i - 1, distinct and sorted (stream and batch store alike)."""
    count = int(sessions.max())
    flat = pc.list_flatten(keys)
    if len(flat) == 0:
        return pa.ListArray.from_arrays(pa.array(np.zeros(count + 1, dtype=np.int32)), flat)
    # Keys as numbers ordered like the strings (few distinct keys, many copies), so the pairs are
    # made distinct and sorted as integers: a string group-by and sort over every stored key of a
    # long session cost several times more (cProfile of lab.bench.owner_merge,
    # docs/history/hot-path-journal.md).
    codes, dictionary = _ranked(flat)
    session = sessions[pc.list_parent_indices(keys).to_numpy()]
    pairs = np.sort(session * len(dictionary) + codes)
    pairs = pairs[np.r_[True, pairs[1:] != pairs[:-1]]]  # np.unique hashes first: slower here
    sizes = np.bincount(pairs // len(dictionary), minlength=count + 1)[1:]
    offsets = pa.array(np.concatenate([[0], np.cumsum(sizes)]).astype(np.int32))
    return pa.ListArray.from_arrays(offsets, dictionary.take(pa.array(pairs % len(dictionary))))


def _ranked(values: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Each value's rank among the distinct values (nulls last, as a sort puts them), and those
    values in order."""
    encoded = pc.dictionary_encode(values, null_encoding="encode")
    order = pc.sort_indices(encoded.dictionary).to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[encoded.indices.to_numpy()], encoded.dictionary.take(pa.array(order))


def _each_key(owners: pa.ChunkedArray | pa.Array, keys: pa.ChunkedArray | pa.Array, name: str) -> pa.Table:
    """(`name`: the owner, key) for each key in each owner's list (a row's user or session), once."""
    owners, keys = _flat(owners), _flat(keys)
    pairs = pa.table({name: owners.take(pc.list_parent_indices(keys)), "key": pc.list_flatten(keys)})
    return pairs.group_by([name, "key"]).aggregate([])


def new_user_tuples(stored: pa.Table, intervals: pa.Table) -> pa.Table:
    """The users new intervals add to each minute's distinct users: (METRIC_KEY, user_id) for each
    metric key of a user's intervals that none of the user's stored sessions holds, once each.

    `stored` must hold the user's stored sessions the intervals reach (`near`): an earlier event of
    the user in the same minute is within the gap of the new one, so its session is among them."""
    fresh = _each_key(intervals["user_id"], intervals["metric_keys"], "user_id")
    if stored.num_rows and fresh.num_rows:
        # Of the stored keys (every key of every reached session), only those some new interval
        # has can decide anything: the rest are dropped before the join.
        lists = _flat(stored["metric_keys"].cast(METRIC_KEYS))
        flat = pc.list_flatten(lists)
        wanted = pc.is_in(flat, value_set=pc.unique(fresh["key"]))
        owners = _flat(stored["user_id"]).take(pc.list_parent_indices(lists).filter(wanted))
        held = pa.table({"user_id": owners, "key": flat.filter(wanted)})
        fresh = fresh.join(held, ["user_id", "key"], join_type="left anti")
    keys = metric_keys_of_texts(fresh["key"])
    return pa.table({**{name: keys[name] for name in METRIC_KEY}, "user_id": fresh["user_id"]})


def near(sessions: pa.Table, intervals: pa.Table) -> pa.Table:
    """The stored sessions that new intervals of the same user can extend or join: those ending no
    more than GAP before the user's first new instant and starting no more than GAP after the last."""
    if sessions.num_rows == 0 or intervals.num_rows == 0:
        return sessions.slice(0, 0)
    bounds = intervals.group_by("user_id").aggregate([("start", "min"), ("end", "max")])
    # Joined without the sessions' other columns: a join carries no list (metric_keys).
    spans = sessions.select(["user_id", "session_start", "session_end"])
    spans = spans.append_column("_row", pa.array(np.arange(sessions.num_rows)))
    joined = spans.join(bounds, "user_id", join_type="inner")
    gap = pa.scalar(GAP, pa.duration("us"))
    reach = pc.and_(
        pc.greater_equal(joined["session_end"], pc.subtract(joined["start_min"], gap)),
        pc.less_equal(joined["session_start"], pc.add(joined["end_max"], gap)),
    )
    return sessions.take(np.sort(joined.filter(reach)["_row"].to_numpy()))


def merged_with(stored: pa.Table, intervals: pa.Table) -> tuple[pa.Table, pa.Table]:
    """The sessions new intervals make with the stored sessions they reach, and those stored
    sessions: each one is replaced, by a merged session of the same key or joined into another."""
    touched = near(stored, intervals)
    merged = sessionize(pa.concat_tables([intervals.cast(INTERVALS), sessions_as_intervals(touched)]))
    return merged, touched


def sessions_of(events: pa.Table) -> pa.Table:
    """The declaration's transform: the sessions a set of events makes, in the table's shape."""
    return sessionize(as_intervals(events))


def user_sessions(events: DataFrame) -> DataFrame:
    """The batch execution: every user's events in one group, `sessionize` per group."""
    columns = events.select("user_id", "event_time", "event_type", "price", "campaign_id")
    group = F.pmod(F.xxhash64("user_id"), F.lit(GROUPS))
    return columns.groupBy(group.alias("_group")).applyInArrow(lambda _key, table: sessions_of(table), COLUMNS)


USER_SESSIONS_SCHEMA = pa.schema(
    [
        ("user_id", pa.string()),
        ("session_start", TIME),
        ("session_end", TIME),
        ("session_date", pa.date32()),
        ("events", pa.int64()),
        ("revenue", REVENUE),
        ("metric_keys", METRIC_KEYS),
    ]
)
