"""Gold's arithmetic where the rows are: each task of a micro-batch adds up its own new events
(streaming/task_writes.py `gold_parts`), distinct users counted from the user tuples the second
state lets through (`user_tuple_rows`, `opened`) or, in the lab's unguarded job, from EU rows; the
driver adds up the tasks' metric rows, and the tasks' sessions reach their users' owners whole."""

import datetime as dt
import random
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from eo.core.transforms.metrics import added_up, minute_metrics, user_tuples, window_start
from eo.core.transforms.sessions import (
    USER_SESSIONS_SCHEMA,
    as_intervals,
    merged_with,
    sessionize,
    sessions_as_intervals,
)
from streaming.parts import PARTS, packed, part_sizes, unpacked
from streaming.session_merge import user_partition
from streaming.task_writes import NO_TUPLES, gold_parts, opened, user_tuple_rows

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
    ]
)


def random_events(rng: random.Random, n: int) -> pa.Table:
    rows = []
    for i in range(n):
        kind = rng.choice(["impression", "click", "purchase"])
        price = Decimal(rng.randint(0, 10**6)) / 100 if kind == "purchase" else None
        when = T0 + dt.timedelta(seconds=rng.randint(0, 7200))
        rows.append((f"e{i}", kind, when, f"u{rng.randint(0, 6)}", f"c{rng.randint(0, 2)}", price))
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


def second_state(tuple_rows: pa.Table, counted: set[tuple]) -> pa.Table:
    """What the stream's second state lets through of the writers' tuple rows: each tuple once,
    and none that it held before (`counted`) or that a seed row brings."""
    seen, kept = set(counted), []
    rows = tuple_rows.to_pylist()
    for row in sorted(rows, key=lambda r: not r["_seed"]):  # the seed's rows first
        key = (row["campaign_id"], row["event_type"], row["_minute"], row["user_id"])
        if key not in seen and not row["_seed"]:
            kept.append(row)
        seen.add(key)
    return pa.Table.from_pylist(kept, tuple_rows.schema)


def tuple_keys(tuples: pa.Table) -> list[tuple]:
    """(campaign, type, minute in microseconds, user) of `user_tuples` rows."""
    minutes = tuples["window_start"].cast(UTC).cast(pa.int64()).to_pylist()
    return list(
        zip(
            tuples["campaign_id"].to_pylist(),
            tuples["event_type"].to_pylist(),
            minutes,
            tuples["user_id"].to_pylist(),
            strict=True,
        )
    )


@pytest.mark.parametrize("seed", range(6))
def test_distinct_users_from_the_new_tuples_add_up_to_the_batch(seed):
    """The stream's writers count no user (`NO_TUPLES`); each returns its tuples, a tuple often in
    several tasks, some held by the seed or by earlier batches. Counted once each after the second
    state, in any task (`opened`), distinct users add up to those of the batch's live events whose
    tuples were new."""
    rng = random.Random(seed)
    events = random_events(rng, 500)
    from_seed = pa.array([rng.random() < 0.1 for _ in range(events.num_rows)])
    rows = events.append_column("_kind", pa.array(["E"] * events.num_rows)).append_column("_seed", from_seed)
    live = rows.filter(pc.invert(from_seed))
    counted = {key for key in tuple_keys(user_tuples(events)) if rng.random() < 0.2}  # earlier batches'
    tasks = spread(rng, rows, rng.randint(1, 6))
    parts = [t for task in tasks for t in gold_parts(task.filter(pc.invert(task["_seed"])), counted=NO_TUPLES)]
    new = second_state(pa.concat_tables([user_tuple_rows(task) for task in tasks]), counted)
    parts += [pa.Table.from_batches(list(opened(iter(p.to_batches())))) for p in spread(rng, new, 3) if p.num_rows]
    metrics = added_up(unpacked(pa.concat_tables(parts), "M"))

    seeded = set(tuple_keys(user_tuples(rows.filter(from_seed))))
    live_tuples = user_tuples(live)
    is_new = pa.array([key not in counted | seeded for key in tuple_keys(live_tuples)], pa.bool_())
    assert _sorted(metrics) == _sorted(minute_metrics(live, live_tuples.filter(is_new)))


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


def test_a_users_owner_is_the_same_in_every_process():
    """The owner must not depend on the Python process (a task's worker): a fixed hash, not hash()."""
    users = pa.array(["u1", "u2", "alice", "", "ü-42"])
    assert user_partition(users, 1_000_003).tolist() == [909543, 659346, 239964, 381525, 104565]


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
    assert out.num_rows == 2 and out.nbytes < events.nbytes / 10
    metrics, intervals = unpacked(out, "M"), unpacked(out, "S")
    keys = pa.table({"c": events["campaign_id"], "t": events["event_type"], "w": window_start(events["event_time"])})
    assert metrics.num_rows == keys.group_by(["c", "t", "w"]).aggregate([]).num_rows
    assert intervals.num_rows <= 7 * 3  # 7 users, a 2-hour span: a few sessions each


def test_what_the_driver_receives_is_split_by_content():
    """The bench's breakdown of the driver's bytes: each gold part's packed files and the files'
    add actions."""
    events = random_events(random.Random(3), 400)
    replaced = sessionize(as_intervals(events.slice(0, 3)))
    out = pa.concat_tables([*gold_parts(kinded(events)), packed("R", replaced)])
    sizes = part_sizes(out)
    blobs = {part: len(out.filter(pc.equal(out["_part"], part))["_gold"][0].as_py()) for part in "MSR"}
    assert sizes == {
        "file actions": 0,
        "metric sums": blobs["M"],
        "session intervals": blobs["S"],
        "replaced session keys": blobs["R"],
    }
    key = [("user_id", "ascending"), ("session_start", "ascending")]
    assert unpacked(out, "R").sort_by(key) == replaced.select(PARTS["R"].names).sort_by(key)
    without = pa.concat_tables(gold_parts(kinded(events)))
    assert set(without["_part"].to_pylist()) == {"M", "S"} and part_sizes(without)["replaced session keys"] == 0


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
        key = [(name, "ascending") for name in back.column_names if name != "revenue"]
        assert back.sort_by(key).to_pylist() == table.sort_by(key).to_pylist()
        assert "revenue" not in back.column_names or back.filter(pc.is_null(back["revenue"])).num_rows >= 1
    spans = pc.subtract(parts["S"]["end"], parts["S"]["start"])
    assert max(spans.to_pylist()) > dt.timedelta(0)  # sessions of more than one instant were packed
