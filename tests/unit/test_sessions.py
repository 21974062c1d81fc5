import datetime as dt
import random
from decimal import Decimal

import pyarrow as pa
import pytest
from pyspark.testing import assertDataFrameEqual

from eo.core.tables import USER_SESSIONS
from eo.core.transforms.sessions import (
    INTERVALS,
    SESSION_KEY,
    USER_SESSIONS_SCHEMA,
    as_intervals,
    merged_with,
    new_user_tuples,
    sessionize,
    sessions_as_intervals,
    user_sessions,
)

pytestmark = pytest.mark.unit

T0 = dt.datetime(2026, 11, 20, 23, 50, 0, tzinfo=dt.UTC)
SCHEMA = (
    "event_id STRING, event_type STRING, event_time TIMESTAMP, user_id STRING, price DECIMAL(10,2), campaign_id STRING"
)
ARROW = pa.schema(
    [
        ("event_id", pa.string()),
        ("event_type", pa.string()),
        ("event_time", pa.timestamp("us", tz="UTC")),
        ("user_id", pa.string()),
        ("price", pa.decimal128(10, 2)),
        ("campaign_id", pa.string()),
    ]
)


def at(minutes: float) -> dt.datetime:
    return T0 + dt.timedelta(minutes=minutes)


def test_a_gap_of_exactly_30_minutes_starts_a_new_session(spark):
    events = spark.createDataFrame(
        [
            ("1", "impression", at(0), "u1", None, "c1"),
            ("2", "purchase", at(29.99), "u1", Decimal("2.50"), "c|2"),  # just inside the gap
            ("3", "impression", at(59.99), "u1", None, "c1"),  # exactly 30 minutes later: new session
            ("4", "impression", at(5), "u2", None, "c1"),
            ("5", "impression", at(5.5), "u2", None, "c1"),  # the same metric key: kept once
        ],
        SCHEMA,
    )
    expected = spark.createDataFrame(
        [
            (
                "u1",
                at(0),
                at(29.99),
                at(0).date(),
                2,
                Decimal("2.50"),
                ["c1|impression|2026-11-20T23:50", "c|2|purchase|2026-11-21T00:19"],
            ),
            ("u1", at(59.99), at(59.99), at(59.99).date(), 1, Decimal("0.00"), ["c1|impression|2026-11-21T00:49"]),
            ("u2", at(5), at(5.5), at(5).date(), 2, Decimal("0.00"), ["c1|impression|2026-11-20T23:55"]),
        ],
        USER_SESSIONS.ddl,
    )
    assertDataFrameEqual(user_sessions(events), expected)


def test_sessions_cross_midnight_and_are_dated_by_their_start(spark):
    events = spark.createDataFrame(
        [("1", "click", at(5), "u1", None, "c1"), ("2", "click", at(25), "u1", None, "c1")], SCHEMA
    )
    (row,) = user_sessions(events).collect()
    assert row.session_date == dt.date(2026, 11, 20) and row.session_end.date() == dt.date(2026, 11, 21)


def random_events(rng: random.Random, n: int) -> pa.Table:
    """Events of a few users over a day, in random (late, out-of-order) arrival order."""
    rows = []
    for i in range(n):
        kind = rng.choice(["impression", "click", "purchase"])
        price = Decimal(rng.randint(0, 10**5)) / 100 if kind == "purchase" else None
        when = at(rng.uniform(0, 24 * 60))
        rows.append((f"e{i}", kind, when, f"u{rng.randint(0, 3)}", price, f"c{rng.randint(0, 2)}"))
    return pa.Table.from_pylist([dict(zip(ARROW.names, r, strict=True)) for r in rows], ARROW)


def key(row: dict) -> tuple:
    return tuple(row[k] for k in SESSION_KEY)


def merge(stored: dict, intervals: pa.Table) -> None:
    """The stream's step on `stored` (sessions by key): the stored sessions the intervals reach are
    replaced by the sessions they merge into (the owners' `merged_with`, the driver's removal)."""
    merged, replaced = merged_with(pa.Table.from_pylist(list(stored.values()), USER_SESSIONS_SCHEMA), intervals)
    for row in replaced.to_pylist():
        del stored[key(row)]
    for row in merged.to_pylist():
        assert key(row) not in stored, "a merged session would sit beside a stored one of its key"
        stored[key(row)] = row


@pytest.mark.parametrize("seed", range(8))
def test_merging_micro_batches_into_stored_sessions_equals_recomputing_everything(seed):
    """The stream's step under any lateness and any cut of the log into micro-batches."""
    rng = random.Random(seed)
    events = random_events(rng, 400)
    cuts = sorted(rng.sample(range(1, 400), rng.randint(1, 12)))
    stored: dict = {}
    for lo, hi in zip([0, *cuts], [*cuts, 400], strict=True):
        merge(stored, as_intervals(events.slice(lo, hi - lo)))
    whole = {key(r): r for r in sessionize(as_intervals(events)).to_pylist()}
    assert stored == whole


def test_a_late_event_between_two_sessions_joins_them_and_replaces_both():
    first = pa.Table.from_pylist(
        [dict(zip(ARROW.names, r, strict=True)) for r in [("a", "click", at(0), "u1", None, "c1")]], ARROW
    )
    second = pa.Table.from_pylist(
        [dict(zip(ARROW.names, r, strict=True)) for r in [("b", "click", at(50), "u1", None, "c1")]], ARROW
    )
    stored = sessionize(as_intervals(pa.concat_tables([first, second])))
    assert stored.num_rows == 2
    late = pa.Table.from_pylist(
        [dict(zip(ARROW.names, r, strict=True)) for r in [("c", "purchase", at(25), "u1", Decimal("1.25"), "c1")]],
        ARROW,
    )
    merged, replaced = merged_with(stored, as_intervals(late))
    assert [(u["session_start"], u["session_end"], u["events"], u["revenue"]) for u in merged.to_pylist()] == [
        (at(0), at(50), 3, Decimal("1.25"))
    ]
    # The earlier one is replaced by the merged session of its key, the later one joined into it.
    assert sorted(r["session_start"] for r in replaced.to_pylist()) == [at(0), at(50)]


@pytest.mark.parametrize("seed", range(8))
def test_sessions_the_tasks_made_merge_like_their_events(seed):
    """The stream's tasks sessionize their own events; the users' owners merge the tasks' sessions
    into the stored ones. Any cut into batches and any spread over tasks gives the sessions of all."""
    rng = random.Random(seed)
    events = random_events(rng, 400)
    cuts = sorted(rng.sample(range(1, 400), rng.randint(1, 6)))
    stored: dict = {}
    for lo, hi in zip([0, *cuts], [*cuts, 400], strict=True):
        batch = events.slice(lo, hi - lo)
        task_of = pa.array([rng.randrange(4) for _ in range(batch.num_rows)])
        tasks = [batch.filter(pa.compute.equal(task_of, task)) for task in range(4)]
        intervals = pa.concat_tables([sessions_as_intervals(sessionize(as_intervals(t))) for t in tasks])
        merge(stored, intervals)
    whole = {key(r): r for r in sessionize(as_intervals(events)).to_pylist()}
    assert stored == whole


ODD_KEYS = ["c1|click|2026-11-20T23:50", "c1|click|2026-11-20T23:51", "c|2|purchase|x", "é|click|m", "Z", "", None]
VALID_KEYS = [
    "c1|click|2026-11-20T23:50", "c1|click|2026-11-20T23:51", "c|2|purchase|2026-11-21T00:10", "é|view|2026-11-20T23:59"
]  # fmt: skip


def random_intervals(rng: random.Random, n: int, words=ODD_KEYS, users: int = 4) -> pa.Table:
    """Intervals of a few users with key lists of any shape: empty, repeated keys, keys that share
    prefixes, hold "|" or non-ASCII text, and (of ODD_KEYS) a null key."""
    rows = []
    for _ in range(n):
        start = at(rng.uniform(0, 300))
        rows.append(
            {
                "user_id": f"u{rng.randrange(users)}",
                "start": start,
                "end": start + dt.timedelta(minutes=rng.choice([0, 0, 5])),
                "events": 1,
                "revenue": None,
                "metric_keys": [rng.choice(words) for _ in range(rng.choice([0, 1, 1, 2, 5]) if words else 0)],
            }
        )
    return pa.Table.from_pylist(rows, INTERVALS)


@pytest.mark.parametrize("seed", range(6))
def test_a_sessions_keys_are_those_of_its_intervals_distinct_and_sorted(seed):
    """Against a plain-Python reading: every key of every interval a session joins, once each,
    in the strings' order, a null key last (as Arrow sorts)."""
    rng = random.Random(seed)
    intervals = random_intervals(rng, 60)
    halves = pa.concat_tables([intervals.slice(0, 30), intervals.slice(30)])  # chunked input
    sessions = sessionize(halves).to_pylist()
    assert sum(s["events"] for s in sessions) == 60
    for session in sessions:
        joined = [
            i
            for i in intervals.to_pylist()
            if i["user_id"] == session["user_id"]
            and session["session_start"] <= i["start"]
            and i["end"] <= session["session_end"]
        ]
        keys = {k for i in joined for k in i["metric_keys"]}
        expected = sorted(k for k in keys if k is not None) + ([None] if None in keys else [])
        assert session["metric_keys"] == expected


def test_intervals_without_keys_make_sessions_without_keys():
    intervals = random_intervals(random.Random(0), 10, words=[])
    assert {len(s["metric_keys"]) for s in sessionize(intervals).to_pylist()} == {0}


@pytest.mark.parametrize("seed", range(6))
def test_a_user_is_new_to_a_key_that_none_of_its_stored_sessions_holds(seed):
    """new_user_tuples against a plain-Python reading, the stored sessions holding many keys that
    no new interval has (odd ones too)."""
    rng = random.Random(seed)
    stored = sessionize(pa.concat_tables([random_intervals(rng, 30), random_intervals(rng, 30, VALID_KEYS)]))
    intervals = random_intervals(rng, 20, VALID_KEYS, users=8)  # users 4-7 have no stored session
    held = {(s["user_id"], k) for s in stored.to_pylist() for k in s["metric_keys"]}
    fresh = {(i["user_id"], k) for i in intervals.to_pylist() for k in i["metric_keys"]}
    assert fresh & held and fresh - held  # both outcomes occur
    found = new_user_tuples(stored, intervals).to_pylist()
    texts = [(r["user_id"], f"{r['campaign_id']}|{r['event_type']}|{r['window_start']:%Y-%m-%dT%H:%M}") for r in found]
    assert sorted(texts) == sorted(fresh - held)
