"""The stored sessions a micro-batch reaches are found by its tasks (streaming/stored_sessions.py):
the task that owns a set of users (streaming/session_merge.py) reads user_sessions at the
driver's version, only its users' sessions that can reach their intervals, and what the owners
merge is exactly what a merge against the whole table gives."""

import datetime as dt
import json
import random
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake
from pyarrow import fs

from eo.core.tables import USER_SESSIONS
from eo.core.transforms.sessions import (
    USER_SESSIONS_SCHEMA,
    as_intervals,
    merged_with,
    near,
    sessionize,
    sessions_as_intervals,
)
from eo.runtime.commits import Table, Txn, commit_files
from eo.runtime.data_files import add_actions, write_files
from eo.runtime.key_removal import TableMoved, remove_and_add
from streaming import stored_sessions
from streaming.parts import REPLACED_PART
from streaming.session_merge import by_owner, merge_owned, user_buckets, user_partition
from streaming.stored_sessions import Owner, SessionsAt, near_stored, pinned, reach_filter, reach_windows

pytestmark = pytest.mark.unit

T0 = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)
EVENTS = pa.schema(
    [("user_id", pa.string()), ("event_time", pa.timestamp("us", tz="UTC")), ("event_type", pa.string()),
     ("price", pa.decimal128(10, 2)), ("campaign_id", pa.string())]
)  # fmt: skip


def events(rng: random.Random, n: int, users: int, hours: int, start=T0) -> pa.Table:
    rows = []
    for _ in range(n):
        kind = rng.choice(["impression", "click", "purchase"])
        price = Decimal(rng.randint(1, 9999)) / 100 if kind == "purchase" else None
        when = start + dt.timedelta(minutes=rng.randint(0, hours * 60))
        user = f"u{rng.randrange(users)}"
        rows.append({"user_id": user, "event_time": when, "event_type": kind, "price": price, "campaign_id": "c1"})
    return pa.Table.from_pylist(rows, EVENTS)


def sorted_rows(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: tuple(str(v) for v in r.values()))


def stored_table(path, sessions: pa.Table, commits: int = 3) -> Table:
    """user_sessions as the stream keeps it: partitioned by date, in several commits (files). The
    first commit's files are plain (as the rebuild writes them), each later one's laid out by the
    owners of a count of its own (3, 4, ...: as owners and the driver's rewrite write them)."""
    for part in range(commits):
        chunk = sessions.filter(pa.array([row % commits == part for row in range(sessions.num_rows)]))
        if part == 0:
            write_deltalake(str(path), chunk, mode="append", partition_by=["session_date"])
            continue
        table = Table(str(path))
        files = write_files(local_fs(table.uri), chunk, ["session_date"], f"c{part}", user_buckets(part + 2))
        commit_files(table.refresh(), add_actions(files))
    return Table(str(path))


def local_fs(uri: str) -> fs.FileSystem:
    return fs.SubTreeFileSystem(uri, fs.LocalFileSystem())


def whole_read(table: Table, intervals: pa.Table) -> pa.Table:
    """The stored sessions the intervals reach, from a read of the whole table."""
    return near(table.refresh().to_pyarrow_table(), intervals)


def in_tasks(at, events: pa.Table, tasks: int, rng: random.Random) -> tuple[pa.Table, pa.Table, pa.Table]:
    """A batch's events spread over `tasks` writing tasks at random, each making the sessions of
    its own events and sending them to their users' owners (as many as the tasks): what the owners
    found stored, and what they merged (sessions, and the stored ones they replace)."""
    task_of = pa.array([rng.randrange(tasks) for _ in range(events.num_rows)])
    local = fs.SubTreeFileSystem(at.uri, fs.LocalFileSystem())
    sent: dict[int, list[pa.Table]] = {}
    for task in range(tasks):
        own = sessions_as_intervals(sessionize(as_intervals(events.filter(pc.equal(task_of, task)))))
        for owner, part in by_owner(own, tasks):
            sent.setdefault(owner, []).append(part)
    found, merged, replaced = [], [], []
    for owner, parts in sent.items():
        intervals = pa.concat_tables(parts)
        stored = near_stored(at, intervals, local, Owner(user_buckets(tasks), owner)).near
        sessions, touched = merged_with(stored, intervals)
        found.append(stored), merged.append(sessions), replaced.append(touched)
    if not found:
        return (USER_SESSIONS_SCHEMA.empty_table(),) * 3
    return tuple(pa.concat_tables(t).cast(USER_SESSIONS_SCHEMA) for t in (found, merged, replaced))


def merged_into(stored: pa.Table, merged: pa.Table, replaced: pa.Table) -> list[dict]:
    """user_sessions after the owners' merge: the replaced keys removed, the merged sessions added."""
    keys = {(r["user_id"], r["session_start"]) for r in replaced.to_pylist()}
    kept = [r for r in stored.to_pylist() if (r["user_id"], r["session_start"]) not in keys]
    return sorted_rows(pa.Table.from_pylist(kept + merged.cast(stored.schema).to_pylist(), stored.schema))


@pytest.mark.parametrize("seed", range(4))
def test_the_tasks_find_what_a_whole_read_finds(tmp_path, seed):
    rng = random.Random(seed)
    old = events(rng, 600, users=12, hours=96)
    history = sessionize(as_intervals(old))
    table = stored_table(tmp_path / "sessions", history)
    # The new events: most recent, some a day or three late, some users never seen before.
    new = pa.concat_tables(
        [
            events(rng, 40, users=15, hours=4, start=T0 + dt.timedelta(hours=94)),
            events(rng, 6, users=12, hours=72, start=T0),
        ]
    )
    intervals = sessions_as_intervals(sessionize(as_intervals(new)))
    recomputed = sorted_rows(sessionize(as_intervals(pa.concat_tables([old, new]))))
    at = pinned(table)
    everything = whole_read(table, intervals)
    assert merged_into(history, *merged_with(everything, intervals)) == recomputed
    for tasks in (1, 3, 4, 7):  # a user's session may be split over tasks; files laid out for 3 and 4
        found, merged, replaced = in_tasks(at, new, tasks, rng)
        assert len(found) == len(set(map(str, sorted_rows(found))))  # each found once, by its owner
        assert set(map(str, sorted_rows(found))) <= set(map(str, sorted_rows(everything.cast(USER_SESSIONS_SCHEMA))))
        assert merged_into(history, merged, replaced) == recomputed
    assert everything.num_rows > 0


def test_a_long_session_started_days_before_is_found(tmp_path):
    """Pruning is by a session's end, not its date partition: a session that started three days
    before and is still open is reached by a new event."""
    click = {"event_type": "click", "price": None, "campaign_id": "c1"}
    long = sessions_as_intervals(sessionize(as_intervals(pa.Table.from_pylist(
        [{"user_id": "u1", "event_time": T0 + dt.timedelta(minutes=20 * i), **click} for i in range(3 * 72)],
        EVENTS))))  # fmt: skip
    other = as_intervals(pa.Table.from_pylist([{"user_id": "u2", "event_time": T0, **click}], EVENTS))
    table = stored_table(tmp_path / "sessions", sessionize(pa.concat_tables([long, other])), commits=1)
    late = pa.Table.from_pylist(
        [{"user_id": "u1", "event_time": T0 + dt.timedelta(hours=72, minutes=5), "event_type": "purchase",
          "price": Decimal("3.00"), "campaign_id": "c1"}], EVENTS)  # fmt: skip
    found, merged, replaced = in_tasks(pinned(table), late, 2, random.Random(0))
    assert found["user_id"].to_pylist() == ["u1"]
    assert found["session_start"].to_pylist()[0] == T0
    assert replaced.to_pylist() == found.to_pylist()
    (session,) = merged.to_pylist()
    assert session["events"] == 3 * 72 + 1 and session["session_start"] == T0


def test_a_task_reads_the_version_it_is_given(tmp_path):
    rng = random.Random(1)
    first = sessionize(as_intervals(events(rng, 50, users=3, hours=2)))
    table = stored_table(tmp_path / "sessions", first, commits=1)
    before = pinned(table)
    later = sessionize(as_intervals(events(rng, 5, users=1, hours=1, start=T0 + dt.timedelta(hours=3))))
    later = later.set_column(0, "user_id", pa.array(["u9"] * later.num_rows))
    write_deltalake(str(tmp_path / "sessions"), later, mode="append", partition_by=["session_date"])
    after = pinned(table)
    assert after.version == before.version + 1
    probe = pa.Table.from_pylist([{"user_id": "u9", "event_time": T0 + dt.timedelta(hours=3, minutes=10),
                                   "event_type": "click", "price": None, "campaign_id": "c1"}], EVENTS)  # fmt: skip
    rng = random.Random(0)
    # The same worker, asked for the older version, then the newer, then the older again.
    assert in_tasks(before, probe, 1, rng)[0].num_rows == 0
    assert in_tasks(after, probe, 1, rng)[0].num_rows > 0
    assert in_tasks(before, probe, 1, rng)[0].num_rows == 0
    assert DeltaTable(before.uri).version() == after.version


def test_no_intervals_no_read(tmp_path):
    table = stored_table(tmp_path / "sessions", sessionize(as_intervals(events(random.Random(2), 20, 2, 1))))
    empty = sessions_as_intervals(USER_SESSIONS_SCHEMA.empty_table())
    assert in_tasks(pinned(table), EVENTS.empty_table(), 2, random.Random(0))[0].num_rows == 0
    assert near_stored(pinned(table), empty, fs.SubTreeFileSystem(table.uri, fs.LocalFileSystem())).near.num_rows == 0


def spans(*pairs) -> pa.Table:
    """Intervals of one user, (start, end) in minutes after T0."""
    return pa.table(
        {
            "user_id": ["u"] * len(pairs),
            "start": pa.array([T0 + dt.timedelta(minutes=a) for a, _ in pairs], pa.timestamp("us", tz="UTC")),
            "end": pa.array([T0 + dt.timedelta(minutes=b) for _, b in pairs], pa.timestamp("us", tz="UTC")),
        }
    )


def minutes(windows) -> list[tuple[float, float]]:
    t0 = int(T0.timestamp() * 1_000_000)
    return [((lo - t0) / 60e6, (hi - t0) / 60e6) for lo, hi in windows]


def test_the_reach_of_intervals_is_their_union_widened_by_the_gap():
    # Out of order, nested and overlapping intervals; two days apart from the rest.
    late, recent = spans((0, 5), (2, 3), (50, 70)), spans((2880, 2881), (2900, 2950), (3000, 3000))
    assert minutes(reach_windows(pa.concat_tables([recent, late]))) == [(-30, 100), (2850, 3030)]
    assert minutes(reach_windows(spans((0, 0), (61, 61)))) == [(-30, 30), (31, 91)]
    # At most `most`: the closest spans are joined first.
    assert minutes(reach_windows(spans((0, 0), (100, 100), (1000, 1000)), most=2)) == [(-30, 130), (970, 1030)]
    assert minutes(reach_windows(spans((0, 0), (100, 100), (1000, 1000)), most=1)) == [(-30, 1030)]


def test_a_late_event_opens_the_files_of_its_own_day_not_of_the_days_between(tmp_path):
    """One file per day of stored sessions, four days: a batch with recent events and one three
    days late reads the first and the last day's files only."""
    rng = random.Random(5)
    table = Table(str(tmp_path / "sessions"))
    for day in range(4):
        daily = sessionize(as_intervals(events(rng, 200, users=20, hours=20, start=T0 + dt.timedelta(days=day))))
        write_deltalake(table.uri, daily, mode="append", partition_by=["session_date"])
    table.refresh()
    stored = DeltaTable(table.uri).to_pyarrow_table().cast(USER_SESSIONS_SCHEMA)

    def late_on(*days: int) -> pa.Table:
        return pa.concat_tables(
            [events(rng, 1, users=20, hours=1, start=T0 + dt.timedelta(days=day, hours=10)) for day in days]
        )

    recent = events(rng, 30, users=20, hours=3, start=T0 + dt.timedelta(days=3, hours=19))
    intervals = sessions_as_intervals(sessionize(as_intervals(pa.concat_tables([recent, late_on(0)]))))
    found = near_stored(pinned(table), intervals, fs.SubTreeFileSystem(table.uri, fs.LocalFileSystem())).near
    dataset = DeltaTable(table.uri).to_pyarrow_dataset()
    opened = [Path(f.path).parent.name for f in dataset.get_fragments(filter=reach_filter(intervals))]
    assert sorted(opened) == ["session_date=2026-11-20", "session_date=2026-11-23"]
    every_day = sessions_as_intervals(sessionize(as_intervals(pa.concat_tables([recent, late_on(0, 1, 2)]))))
    assert len(list(dataset.get_fragments(filter=reach_filter(every_day)))) == 4
    assert merged_into(stored, *merged_with(found, intervals)) == merged_into(stored, *merged_with(stored, intervals))


def test_a_kept_table_reaches_the_version_asked_for_after_log_cleanup(tmp_path, monkeypatch):
    """A standby's workers keep the version its rehearsal read for as long as it waits: by its first
    batch many commits have landed, and log cleanup may have removed them (a checkpoint is kept)."""
    monkeypatch.setattr(stored_sessions, "_OPENED", {})
    uri = str(tmp_path / "sessions")
    rows = sessionize(as_intervals(events(random.Random(1), 20, users=3, hours=2)))
    for _ in range(2):
        write_deltalake(uri, rows, mode="append", partition_by=["session_date"])
    assert stored_sessions._opened(SessionsAt(uri, 1)).version() == 1  # what the worker keeps
    for _ in range(12):
        write_deltalake(uri, rows, mode="append", partition_by=["session_date"])
    latest = DeltaTable(uri).version()
    DeltaTable(uri).create_checkpoint()
    for commit in Path(uri, "_delta_log").glob("*.json"):
        if int(commit.stem) < latest:
            commit.unlink()
    table = stored_sessions._opened(SessionsAt(uri, latest))
    assert table.version() == latest
    assert sorted(table.file_uris()) == sorted(DeltaTable(uri).file_uris())


def test_an_owner_opens_its_own_files_whole_and_no_other_owners(tmp_path):
    """Files laid out for 4 owners: owner 2 of 4 reads its own whole, skips the other owners', and
    reads the plain and the 3-owner files (which may hold any user); what it finds equals a whole
    read's."""
    rng = random.Random(3)
    table = stored_table(tmp_path / "sessions", sessionize(as_intervals(events(rng, 400, users=40, hours=2))))
    new = events(rng, 60, users=40, hours=1, start=T0 + dt.timedelta(minutes=30))
    intervals = sessions_as_intervals(sessionize(as_intervals(new)))
    mine = intervals.filter(pc.equal(pa.array(user_partition(intervals["user_id"], 4)), 2))
    owner = Owner(user_buckets(4), 2)
    dataset = DeltaTable(table.uri).to_pyarrow_dataset(filesystem=local_fs(table.uri))
    shared, own = stored_sessions._split_by_owner(dataset, reach_filter(mine), owner)
    noted = {f.path: user_buckets(4).bucket_of(f.metadata.metadata) for f in dataset.get_fragments()}
    assert sorted(f.path for f in own) == sorted(path for path, bucket in noted.items() if bucket == 2)
    assert sorted(f.path for f in shared.get_fragments()) == sorted(p for p, b in noted.items() if b is None)
    assert own and len(noted) > len(own) + len(list(shared.get_fragments()))  # other owners' files skipped
    reached = near_stored(pinned(table), mine, local_fs(table.uri), owner)
    assert sorted_rows(reached.near) == sorted_rows(whole_read(table, mine).cast(reached.near.schema))
    assert sorted(reached.own_files) == sorted(f.path for f in own)
    assert reached.near.num_rows > 0


@pytest.mark.parametrize("seed", range(4))
def test_owners_that_rewrite_their_own_files_leave_the_sessions_of_every_event_once(tmp_path, seed):
    """Batch after batch, owners merge their users' new intervals and rewrite their own files, the
    driver removing the other files' replaced keys and committing: the table always equals the
    sessions of all the events so far, with late events, a rebuild's plain files, and a change in
    the number of owners (a file of another count is everyone's until rewritten)."""
    rng = random.Random(seed)
    history = events(rng, 300, users=25, hours=6)
    table = stored_table(tmp_path / "sessions", sessionize(as_intervals(history)), commits=1)
    seen, rewritten = [history], 0
    for batch, owners in enumerate((3, 3, 4, 4, 4, 2)):
        new = pa.concat_tables(
            [events(rng, 30, users=25, hours=1, start=T0 + dt.timedelta(hours=6 + batch)), events(rng, 3, 25, 6)]
        )
        seen.append(new)
        at, files, keys, removed = pinned(table), [], [], []
        for owner, part in by_owner(sessions_as_intervals(sessionize(as_intervals(new))), owners):
            done = merge_owned(
                at, part, Owner(user_buckets(owners), owner), local_fs(at.uri), local_fs(at.uri), f"b{batch}"
            )
            files += done.files
            keys.append(done.replaced)
            removed += done.rewritten
        replaced = pa.concat_tables(keys) if keys else REPLACED_PART.empty_table()
        remove_and_add(
            table,
            USER_SESSIONS,
            local_fs(at.uri),
            replaced,
            files,
            Txn("app", 0, batch),
            "r",
            buckets=user_buckets(owners),
            rewritten=removed,
        )
        rewritten += len(removed)
        expected = sorted_rows(sessionize(as_intervals(pa.concat_tables(seen))))
        assert sorted_rows(table.refresh().to_pyarrow_table().cast(USER_SESSIONS_SCHEMA)) == expected
    assert rewritten > 0


def owners_merges(rng, table, owners: int = 3):
    """A batch's merge by `owners` owners on the table as it is now: (the version they read, the
    history and the new events, what they wrote, the keys they replaced, the files they rewrote)."""
    at = pinned(table)
    new = events(rng, 20, users=5, hours=2)
    merges = [
        merge_owned(at, part, Owner(user_buckets(owners), o), local_fs(at.uri), local_fs(at.uri), "b")
        for o, part in by_owner(sessions_as_intervals(sessionize(as_intervals(new))), owners)
    ]
    replaced = pa.concat_tables([m.replaced for m in merges])
    return at, new, [f for m in merges for f in m.files], replaced, [r for m in merges for r in m.rewritten]


def test_a_file_an_owner_rewrote_that_a_compaction_took_is_planned_again_where_its_rows_went(tmp_path):
    """OPTIMIZE beside the stream: the files an owner rewrote left the table since it read it
    (compacted into others). The driver removes their rows' older copies where they are now, and
    the table holds every session once, as if the compaction had come after the batch."""
    rng = random.Random(4)
    history = events(rng, 100, users=5, hours=2)
    table = stored_table(tmp_path / "sessions", sessionize(as_intervals(history)), commits=3)
    at, new, files, replaced, rewritten = owners_merges(rng, table)
    assert rewritten, "an owner rewrote a file of its own"
    DeltaTable(table.uri).optimize.compact()  # a compaction since the owners read the table
    table.refresh()  # as the driver refreshes it to commit
    active = set(table.current.get_add_actions(flatten=True).column("path").to_pylist())
    assert rewritten and not set(rewritten) & active, "the compaction took the files the owners rewrote"
    remove_and_add(
        table, USER_SESSIONS, local_fs(at.uri), replaced, files, Txn("app", 0, 1), "r",
        buckets=user_buckets(3), rewritten=rewritten, read_at=at.version,
    )  # fmt: skip
    expected = sorted_rows(sessionize(as_intervals(pa.concat_tables([history, new]))))
    assert sorted_rows(table.refresh().to_pyarrow_table().cast(USER_SESSIONS_SCHEMA)) == expected
    assert [h["operation"] for h in table.current.history(2)] == ["WRITE", "OPTIMIZE"]


def test_without_the_version_the_owners_read_a_moved_file_makes_the_batch_be_read_again(tmp_path):
    rng = random.Random(4)
    table = stored_table(tmp_path / "sessions", sessionize(as_intervals(events(rng, 100, users=5, hours=2))))
    at, _, files, replaced, rewritten = owners_merges(rng, table)
    DeltaTable(table.uri).optimize.compact()
    table.refresh()
    with pytest.raises(TableMoved, match="no longer in the table"):
        remove_and_add(table, USER_SESSIONS, local_fs(at.uri), replaced, files, Txn("app", 0, 1), "r",
                       rewritten=rewritten)  # fmt: skip


@pytest.mark.parametrize("compliant", [True, False], ids=["element", "legacy-item"])
def test_an_owners_own_files_are_read_whole(tmp_path, compliant):
    """An owner reads its own files whole: the rows (the date from the file's partition included)
    equal a plain read's, and so do the sessions it finds, whether the file's list is named as
    the tasks' writer names it (`element`) or otherwise (`item`, older writers)."""
    rng = random.Random(11)
    sessions = sessionize(as_intervals(events(rng, 300, users=30, hours=30)))
    assert len(set(sessions["session_date"].to_pylist())) == 2
    assert max(map(len, sessions["metric_keys"].to_pylist())) > 1
    write_deltalake(str(tmp_path / "t"), sessions.slice(0, 0), partition_by=["session_date"])
    table = Table(str(tmp_path / "t"))
    local = local_fs(table.uri)
    files = []
    for owner, part in by_owner(sessions, 2):
        if compliant:
            files += write_files(local, part, ["session_date"], f"o{owner}", user_buckets(2), bucket=owner)
        else:  # the same file, written with Parquet's legacy list naming
            for day in pc.unique(part["session_date"]):
                rows = part.filter(pc.equal(part["session_date"], day)).drop_columns(["session_date"])
                path = f"session_date={day}/legacy-{owner}.parquet"
                local.create_dir(f"session_date={day}")
                noted = rows.replace_schema_metadata(user_buckets(2).note(owner))
                pq.write_table(noted, path, filesystem=local, use_compliant_nested_type=False)
                values = json.dumps({"session_date": str(day)})
                size = local.get_file_info(path).size
                files.append({"path": path, "size": size, "partition_values": values, "stats": None})
    commit_files(table.refresh(), add_actions(files))
    for written in files:
        schema = pq.read_metadata(tmp_path / "t" / written["path"]).schema
        leaves = {schema.column(i).path for i in range(len(schema))}
        assert ("metric_keys.list.element" in leaves) == compliant
    new = events(rng, 40, users=30, hours=30)
    intervals = sessions_as_intervals(sessionize(as_intervals(new)))
    for owner, mine in by_owner(intervals, 2):
        reached = near_stored(pinned(table), mine, local, Owner(user_buckets(2), owner))
        read = pa.concat_tables(reached.own_files.values())
        assert read.schema.field("metric_keys").type == pa.list_(pa.string())
        plain = DeltaTable(table.uri).to_pyarrow_table()
        theirs = plain.filter(pc.equal(pa.array(user_partition(plain["user_id"], 2)), owner))
        assert sorted_rows(read.cast(USER_SESSIONS_SCHEMA)) == sorted_rows(theirs.cast(USER_SESSIONS_SCHEMA))
        assert sorted_rows(reached.near) == sorted_rows(whole_read(table, mine).cast(reached.near.schema))
        assert reached.near.schema.field("metric_keys").type == pa.list_(pa.string())
        assert reached.near.num_rows > 0 and read.num_rows > reached.near.num_rows
