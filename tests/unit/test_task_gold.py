"""Gold's arithmetic where the rows are: each task of a micro-batch adds up its own new events
(streaming/task_writes.py `gold_parts`), the sessions' owners count the users new to each minute
against the stored sessions (`new_user_tuples`) or, in the lab's unguarded job, the tasks count EU
rows; the driver adds up the tasks' metric rows, and the tasks' sessions reach their users' owners
whole."""

import datetime as dt
import random
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from eo.core.gold import summed_tables
from eo.core.tables import METRIC_WINDOW_MINUTES, SESSION_GAP_MINUTES
from eo.core.transforms.metrics import NO_USERS, added_up, minute_metrics, user_tuples, users_added, window_start
from eo.core.transforms.sessions import (
    USER_SESSIONS_SCHEMA,
    as_intervals,
    merged_with,
    near,
    new_user_tuples,
    sessionize,
    sessions_as_intervals,
)
from streaming.parts import PARTS, packed, part_sizes, unpacked
from streaming.session_merge import user_partition
from streaming.task_writes import gold_parts

pytestmark = pytest.mark.unit

T0 = dt.datetime(2026, 11, 20, 23, 40, tzinfo=dt.UTC)
UTC = pa.timestamp("us", tz="UTC")
E_ROWS = pa.schema(
    [
        ("event_id", pa.string()),
        ("event_type", pa.string()),
        ("event_time", UTC),
        ("user_id", pa.string()),
        ("campaign_id", pa.string()),
        ("price", pa.decimal128(10, 2)),
        ("ad_id", pa.string()),  # silver's columns a declared table reads
    ]
)


def random_events(rng: random.Random, n: int) -> pa.Table:
    rows = []
    for i in range(n):
        kind = rng.choice(["impression", "click", "purchase"])
        price = Decimal(rng.randint(0, 10**6)) / 100 if kind == "purchase" else None
        when = T0 + dt.timedelta(seconds=rng.randint(0, 7200))
        rows.append((f"e{i}", kind, when, f"u{rng.randint(0, 6)}", f"c{rng.randint(0, 2)}", price, f"a{i % 4}"))
    return pa.Table.from_pylist([dict(zip(E_ROWS.names, r, strict=True)) for r in rows], E_ROWS)


def spread(rng: random.Random, table: pa.Table, tasks: int) -> list[pa.Table]:
    """A table's rows over tasks at random, as a shuffle by another key would put them."""
    task_of = pa.array([rng.randrange(tasks) for _ in range(table.num_rows)])
    return [table.filter(pc.equal(task_of, task)) for task in range(tasks)]


def kinded(events: pa.Table, counted: set[tuple] = frozenset()) -> pa.Table:
    """The plan's event rows: the first row of each (campaign, type, minute, user) not `counted`
    before is EU, the others E."""
    starts = window_start(events["event_time"])
    seen, kinds = set(counted), []
    for row, start in zip(events.to_pylist(), starts.to_pylist(), strict=True):
        tuple_ = (row["campaign_id"], row["event_type"], start, row["user_id"])
        kinds.append("E" if tuple_ in seen else "EU")
        seen.add(tuple_)
    return events.append_column("window_start", starts).append_column("_kind", pa.array(kinds))


@pytest.mark.parametrize("seed", range(6))
def test_the_tasks_rows_add_up_to_the_batch(seed):
    """Event rows reach the tasks shuffled by their user tuple, but a task's sums must not rest on
    that: spread at random, a task may hold a tuple's EU row without its other events, or events
    without their EU row. The sums are the batch's all the same."""
    rng = random.Random(seed)
    events = random_events(rng, 500)
    users = user_tuples(events)
    tasks = rng.randint(1, 6)
    out = pa.concat_tables([table for part in spread(rng, kinded(events), tasks) for table in gold_parts(part)])
    metrics, intervals = added_up(unpacked(out, "M")), unpacked(out, "S")

    def rows(table: pa.Table) -> list[dict]:
        return sorted(table.to_pylist(), key=lambda r: tuple(str(v) for v in r.values()))

    assert rows(metrics) == rows(minute_metrics(events, users))
    sessions, _ = merged_with(USER_SESSIONS_SCHEMA.empty_table(), intervals)
    assert rows(sessions) == rows(sessionize(as_intervals(events)))


@pytest.mark.parametrize("seed", range(8))
def test_the_users_new_to_each_minute_add_up_to_the_batch(seed):
    """The stream's writers count no user (`NO_USERS`); each owner counts, of its users' new
    intervals, the metric keys that none of the user's stored sessions it reaches holds. Over
    tasks and owners at random, with earlier events of the same users in the same minutes, hours
    before and after, the distinct users added are those of all the events less those of the
    earlier ones, key by key."""
    rng = random.Random(seed)
    events = random_events(rng, 600)
    earlier = pc.less(pa.array([rng.random() for _ in range(events.num_rows)]), 0.5)
    old, new = events.filter(earlier), events.filter(pc.invert(earlier))
    stored = sessionize(as_intervals(old))
    owners = rng.randint(1, 5)
    rows = new.append_column("_kind", pa.array(["E"] * new.num_rows))
    parts = [t for task in spread(rng, rows, rng.randint(1, 6)) for t in gold_parts(task, owners, counted=NO_USERS)]
    out = pa.concat_tables(parts)
    sent = out.filter(pc.equal(out["_part"], "S"))
    for owner in set(sent["_bucket"].to_pylist()):
        intervals = unpacked(sent.filter(pc.equal(sent["_bucket"], owner)), "S")
        tuples = new_user_tuples(near(stored, intervals), intervals)
        parts.append(packed("M", users_added(tuples)))
    metrics = added_up(unpacked(pa.concat_tables(parts), "M"))

    before = {
        (r["campaign_id"], r["event_type"], r["window_start"]): r
        for r in minute_metrics(old, user_tuples(old)).to_pylist()
    }
    after = minute_metrics(events, user_tuples(events)).to_pylist()
    expected = []
    for row in after:
        was = before.get((row["campaign_id"], row["event_type"], row["window_start"]))
        if was is None or was["events"] != row["events"]:  # a key the new events touch
            gone = {} if was is None else was
            expected.append(
                {
                    **row,
                    "events": row["events"] - gone.get("events", 0),
                    "distinct_users": row["distinct_users"] - gone.get("distinct_users", 0),
                    "revenue": row["revenue"] - gone.get("revenue", 0),
                }
            )
    assert _sorted(metrics) == _sorted(pa.Table.from_pylist(expected, metrics.schema))
    assert pc.sum(metrics["distinct_users"]).as_py() < user_tuples(new).num_rows  # some users were not new


def test_a_metric_window_fits_in_the_session_gap():
    """Two events of a user in one window must be within the gap of each other, or the owners
    would not reach the earlier one's session when counting the later one."""
    assert METRIC_WINDOW_MINUTES < SESSION_GAP_MINUTES


def test_a_user_is_new_to_a_minute_once_whatever_stored_session_holds_it():
    """new_user_tuples, by hand: a key held by the user's stored session is not new, the same key
    of another user is, and a user's key in two new intervals counts once."""
    at = lambda minute: T0 + dt.timedelta(minutes=minute)  # noqa: E731
    old = pa.Table.from_pylist(
        [
            {"event_id": "o1", "event_type": "click", "event_time": at(0), "user_id": "u1", "campaign_id": "c|1"},
            {"event_id": "o2", "event_type": "click", "event_time": at(5), "user_id": "u2", "campaign_id": "c2"},
        ],
        E_ROWS,
    )
    new = pa.Table.from_pylist(
        [
            {"event_id": "n1", "event_type": "click", "event_time": at(0.5), "user_id": "u1", "campaign_id": "c|1"},
            {"event_id": "n2", "event_type": "click", "event_time": at(0.2), "user_id": "u3", "campaign_id": "c|1"},
            {"event_id": "n3", "event_type": "view", "event_time": at(0.9), "user_id": "u1", "campaign_id": "c|1"},
            {"event_id": "n4", "event_type": "click", "event_time": at(5.5), "user_id": "u2", "campaign_id": "c2"},
            {"event_id": "n5", "event_type": "click", "event_time": at(90), "user_id": "u2", "campaign_id": "c2"},
            {"event_id": "n6", "event_type": "click", "event_time": at(90.1), "user_id": "u2", "campaign_id": "c2"},
        ],
        E_ROWS,
    )
    stored, intervals = sessionize(as_intervals(old)), sessions_as_intervals(sessionize(as_intervals(new)))
    found = new_user_tuples(near(stored, intervals), intervals)
    got = sorted((r["user_id"], r["campaign_id"], r["event_type"], r["window_start"]) for r in found.to_pylist())
    minute = window_start(pa.array([at(0)], UTC))[0].as_py()
    later = window_start(pa.array([at(90)], UTC))[0].as_py()
    assert got == [("u1", "c|1", "view", minute), ("u2", "c2", "click", later), ("u3", "c|1", "click", minute)]
    assert new_user_tuples(stored.slice(0, 0), intervals.slice(0, 0)).num_rows == 0


def _sorted(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: tuple(str(v) for v in r.values()))


@pytest.mark.parametrize("owners", [1, 2, 3, 8])
def test_each_users_sessions_go_to_one_owner_and_none_is_lost(owners):
    """Split by owner, every task sends a user's intervals to the same owner, whatever the task;
    each owner's parts hold only its users, and all owners together hold every interval."""
    rng = random.Random(owners)
    events = random_events(rng, 400)
    out = pa.concat_tables([t for part in spread(rng, kinded(events), 3) for t in gold_parts(part, owners)])
    sent = out.filter(pc.equal(out["_part"], "S"))
    assert set(sent["_bucket"].to_pylist()) <= set(range(owners))
    everyone = []
    for owner in set(sent["_bucket"].to_pylist()):
        theirs = unpacked(sent.filter(pc.equal(sent["_bucket"], owner)), "S")
        assert set(user_partition(theirs["user_id"], owners).tolist()) == {owner}
        everyone.append(theirs)
    key = [("user_id", "ascending"), ("start", "ascending")]
    assert pa.concat_tables(everyone).sort_by(key) == unpacked(out, "S").sort_by(key)
    assert pc.sum(unpacked(out, "S")["events"]).as_py() == events.num_rows


@pytest.mark.parametrize("owners", [1, 2, 4, 8])
def test_each_campaigns_sums_go_to_one_owner_and_add_up_to_the_batch(owners):
    """The writers' metric sums are split by campaign over the owners (not all sent to one task):
    every writer sends a campaign's sums to the same owner, no owner receives another's campaign,
    and what the owners receive adds up to the batch's sums."""
    rng = random.Random(owners)
    events = random_events(rng, 500)
    many = pa.array([f"c{rng.randint(0, 40)}" for _ in range(events.num_rows)])  # more campaigns than owners
    events = events.set_column(events.schema.get_field_index("campaign_id"), "campaign_id", many)
    rows = events.append_column("_kind", pa.array(["E"] * events.num_rows))
    tasks = spread(rng, rows, 3)
    out = pa.concat_tables([t for part in tasks for t in gold_parts(part, owners, counted=NO_USERS)])
    sums = out.filter(pc.equal(out["_part"], "M"))
    buckets = set(sums["_bucket"].to_pylist())
    assert buckets <= set(range(owners)) and None not in buckets
    if owners > 1:
        assert len(buckets) > 1  # 41 campaigns do not all hash to one owner
    for owner in buckets:
        theirs = unpacked(sums.filter(pc.equal(sums["_bucket"], owner)), "M")
        assert set(user_partition(theirs["campaign_id"], owners).tolist()) == {owner}
    assert _sorted(added_up(unpacked(out, "M"))) == _sorted(minute_metrics(events, NO_USERS))


def test_a_users_owner_is_the_same_in_every_process():
    """The owner must not depend on the Python process (a task's worker): a fixed hash, not hash()."""
    users = pa.array(["u1", "u2", "alice", "", "ü-42"])
    assert user_partition(users, 1_000_003).tolist() == [909543, 659346, 239964, 381525, 104565]
    # Repeated users over several chunks (each distinct user is hashed once) and a null among them.
    repeated = pa.chunked_array([["alice", "u1", "alice"], ["ü-42", "u1", "", "u2"]])
    assert user_partition(repeated, 1_000_003).tolist() == [239964, 909543, 239964, 104565, 909543, 381525, 659346]
    with_null = user_partition(pa.array(["u2", None, "u2"]), 1_000_003).tolist()
    assert with_null[0] == with_null[2] == 659346


def test_a_task_without_rows_returns_nothing_and_counted_tuples_add_no_user():
    events = random_events(random.Random(1), 20)
    assert gold_parts(kinded(events).slice(0, 0)) == []
    tuples = user_tuples(events).select(["campaign_id", "event_type", "window_start", "user_id"])
    all_counted = {tuple(row.values()) for row in tuples.to_pylist()}
    metrics = unpacked(pa.concat_tables(gold_parts(kinded(events, all_counted))), "M")
    assert pc.sum(metrics["distinct_users"]).as_py() == 0 and pc.sum(metrics["events"]).as_py() == 20
    metrics = unpacked(pa.concat_tables(gold_parts(kinded(events))), "M")
    assert pc.sum(metrics["distinct_users"]).as_py() == user_tuples(events).num_rows


def test_the_driver_receives_far_fewer_rows_than_the_batch_has_events():
    """Many events of few users and keys: a row per key and per session, not per event, and two
    compressed rows per task."""
    events = random_events(random.Random(2), 5000)
    out = pa.concat_tables(gold_parts(kinded(events)))
    parts = 2 + len(summed_tables())  # metric sums, session intervals, each additive table's sums
    assert out.num_rows == parts and out.nbytes < events.nbytes / 10
    metrics, intervals = unpacked(out, "M"), unpacked(out, "S")
    keys = pa.table({"c": events["campaign_id"], "t": events["event_type"], "w": window_start(events["event_time"])})
    assert metrics.num_rows == keys.group_by(["c", "t", "w"]).aggregate([]).num_rows
    assert intervals.num_rows <= 7 * 3  # 7 users, a 2-hour span: a few sessions each


def test_what_the_driver_receives_is_split_by_content():
    """The bench's breakdown of the driver's bytes: each gold part's packed files and the files'
    add actions."""
    events = random_events(random.Random(3), 400)
    replaced = sessionize(as_intervals(events.slice(0, 3)))
    rewritten = pa.table({"path": ["session_date=2026-11-20/part-1.parquet"]})
    out = pa.concat_tables([*gold_parts(kinded(events)), packed("R", replaced), packed("X", rewritten)])
    sizes = {k: v for k, v in part_sizes(out).items() if not k.startswith("sums of ")}  # less additive tables
    blobs = {part: len(out.filter(pc.equal(out["_part"], part))["_gold"][0].as_py()) for part in "MSRX"}
    assert sizes == {
        "file actions": 0,
        "metric sums": blobs["M"],
        "session intervals": blobs["S"],
        "replaced session keys": blobs["R"],
        "rewritten session files": blobs["X"],
    }
    assert unpacked(out, "X") == rewritten
    key = [("user_id", "ascending"), ("session_start", "ascending")]
    assert unpacked(out, "R").sort_by(key) == replaced.select(PARTS["R"].names).sort_by(key)
    without = pa.concat_tables(gold_parts(kinded(events)))
    assert {p for p in without["_part"].to_pylist() if not p.startswith("A:")} == {"M", "S"}
    assert part_sizes(without)["replaced session keys"] == 0


def test_each_part_comes_back_from_its_packing_as_it_went_in():
    """Packed sorted, with end times as spans from the start (streaming/parts.py `packed`):
    unpacked, every part holds the same rows, times to the microsecond, null revenue included."""
    rng = random.Random(11)
    events = random_events(rng, 300)
    sessions = sessionize(as_intervals(events))
    parts = {
        "M": minute_metrics(kinded(events), user_tuples(kinded(events))),
        "S": sessions_as_intervals(sessions),
        "R": sessions,
    }
    for part, table in parts.items():
        table = table.select(PARTS[part].names).cast(PARTS[part])
        # and a row whose every nullable value is null (revenue: no purchase; a user or campaign
        # of its own, so that it sorts apart from the row it copies)
        empty = {f.name: None for f in PARTS[part] if f.nullable}
        own = {"user_id": "u-none"} if "user_id" in table.column_names else {"campaign_id": "c-none"}
        table = pa.concat_tables([table, pa.Table.from_pylist([{**table.to_pylist()[0], **empty, **own}], PARTS[part])])
        shuffled = table.take(pa.array(rng.sample(range(table.num_rows), table.num_rows)))
        back = unpacked(packed(part, shuffled), part)
        assert back.schema == PARTS[part]
        key = [(name, "ascending") for name in back.column_names if name not in ("revenue", "metric_keys")]
        assert back.sort_by(key).to_pylist() == table.sort_by(key).to_pylist()
        assert "revenue" not in back.column_names or back.filter(pc.is_null(back["revenue"])).num_rows >= 1
    spans = pc.subtract(parts["S"]["end"], parts["S"]["start"])
    assert max(spans.to_pylist()) > dt.timedelta(0)  # sessions of more than one instant were packed
