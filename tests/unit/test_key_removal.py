"""A MERGE whose new rows the tasks wrote (eo/runtime/key_removal.py): the keys' rows removed from
whichever files hold them, those files written again without them, the new files added, in one
commit with the batch's txn; a key the table does not hold commits nothing."""

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake
from pyarrow import fs

from eo.core.tables import USER_SESSIONS
from eo.core.transforms.sessions import USER_SESSIONS_SCHEMA
from eo.runtime.commits import Table, Txn
from eo.runtime.data_files import write_files
from eo.runtime.key_removal import KeysNotFound, TableMoved, holding_files, remove_and_add
from eo.runtime.maintenance_race import changed_since
from streaming.session_merge import user_buckets, user_partition

pytestmark = pytest.mark.unit

T0 = dt.datetime(2026, 11, 20, 8, tzinfo=dt.UTC)


def sessions(*rows: tuple[str, int]) -> pa.Table:
    """(user, hours after T0) -> one-event sessions."""
    starts = [T0 + dt.timedelta(hours=h) for _, h in rows]
    return pa.table(
        {
            "user_id": [u for u, _ in rows],
            "session_start": starts,
            "session_end": starts,
            "session_date": [s.date() for s in starts],
            "events": [1] * len(rows),
            "revenue": [None] * len(rows),
            "metric_keys": [[f"c1|click|{s:%Y-%m-%dT%H:%M}"] for s in starts],
        },
        schema=USER_SESSIONS_SCHEMA,
    )


def rows(table: Table) -> list[tuple]:
    return sorted(
        (r["user_id"], r["session_start"], r["events"]) for r in table.refresh().to_pyarrow_table().to_pylist()
    )


@pytest.fixture
def table(tmp_path) -> Table:
    """Three commits, three files on 2026-11-20 and one on 2026-11-21 (hour 20 = 04:00 the next day)."""
    for chunk in (sessions(("a", 0), ("b", 1)), sessions(("c", 5), ("d", 6)), sessions(("e", 10), ("f", 20))):
        write_deltalake(str(tmp_path / "s"), chunk, mode="append", partition_by=["session_date"])
    return Table(str(tmp_path / "s"))


def local(table: Table):
    return fs.SubTreeFileSystem(table.uri, fs.LocalFileSystem())


def new_files(table: Table, merged: pa.Table) -> list[dict]:
    return write_files(local(table), merged, ["session_date"], "tasks")


def test_the_keys_go_and_the_tasks_files_come_in_one_commit(table):
    before = table.refresh().version()
    merged = sessions(("a", 0), ("z", 7)).set_column(4, "events", pa.array([2, 1], pa.int64()))  # a, extended
    replaced = sessions(("a", 0), ("c", 5))  # c joined into another session
    done = remove_and_add(table, USER_SESSIONS, local(table), replaced, new_files(table, merged), Txn("app", 3, 9), "r")
    assert table.refresh().version() == before + 1
    assert table.reached("app") == (3, 9)
    assert [(u, e) for u, _, e in rows(table)] == [("a", 2), ("b", 1), ("d", 1), ("e", 1), ("f", 1), ("z", 1)]
    # The two files that held a and c were read and written again; the others were not opened.
    assert (done.files_read, done.files_removed) == (2, 2)
    assert done.bytes_read > 0


def test_a_file_left_empty_is_removed_and_not_written_again(table):
    files_before = set(table.refresh().file_uris())
    remove_and_add(table, USER_SESSIONS, local(table), sessions(("e", 10), ("f", 20)), [], Txn("app", 0, 1), "r")
    assert [u for u, _, _ in rows(table)] == ["a", "b", "c", "d"]
    assert set(table.refresh().file_uris()) < files_before  # nothing new: both files held only e or f


def test_a_key_the_table_does_not_hold_commits_nothing(table):
    before = table.refresh().version()
    with pytest.raises(KeysNotFound, match="1 of 2 keys"):
        remove_and_add(table, USER_SESSIONS, local(table), sessions(("a", 0), ("a", 3)), [], Txn("app", 0, 1), "r")
    assert table.refresh().version() == before
    assert len(rows(table)) == 6


def test_the_files_that_may_hold_a_key_are_found_by_partition_and_range(table):
    files = pa.table(table.refresh().get_add_actions(flatten=True))
    held = holding_files(files, USER_SESSIONS, sessions(("x", 5.5), ("y", 20)))
    # 05:30 falls inside the second file's range (05:00-06:00); 04:00 on the 21st only in the last.
    assert sorted(Path(p).parent.name for p in held["path"].to_pylist()) == [
        "session_date=2026-11-20",
        "session_date=2026-11-21",
    ]
    assert holding_files(files, USER_SESSIONS, sessions(("x", 8))).num_rows == 0  # between files' ranges
    assert holding_files(files, USER_SESSIONS, sessions()).num_rows == 0
    # Without statistics a file may hold any key: only its partition rules it out.
    bare = files.drop_columns([c for c in files.column_names if c.startswith(("min.", "max."))])
    assert holding_files(bare, USER_SESSIONS, sessions(("x", 8))).num_rows == 3


def test_only_commits_that_may_change_rows_count_as_a_move(table):
    version = table.refresh().version()
    DeltaTable(table.uri).optimize.compact()
    table.refresh()
    assert changed_since(table, version) == []
    write_deltalake(table.uri, sessions(("g", 2)), mode="append", partition_by=["session_date"])
    table.refresh()
    assert changed_since(table, version) == [f"WRITE@{version + 2}"]
    assert changed_since(table, version + 2) == []


def test_a_file_that_keeps_its_partition_column_is_rewritten_from_the_log(tmp_path):
    """Spark's Delta writer kept session_date inside the files of the bench's prefilled history:
    the rewrite must take partition values from the log, once."""
    import json

    import pyarrow.parquet as pq

    from eo.runtime.commits import commit_files
    from eo.runtime.data_files import add_actions, file_stats

    write_deltalake(str(tmp_path / "s"), sessions(("a", 0)), mode="append", partition_by=["session_date"])
    table = Table(str(tmp_path / "s"))
    whole = sessions(("b", 1), ("c", 2))  # with its session_date column, as Spark left it
    path = "session_date=2026-11-20/part-spark-0000.parquet"
    collected: list = []
    pq.write_table(whole, str(tmp_path / "s" / path), metadata_collector=collected)
    action = {"path": path, "size": (tmp_path / "s" / path).stat().st_size, "rows": 2}
    action |= {"partition_values": json.dumps({"session_date": "2026-11-20"})}
    action["stats"] = file_stats(collected[0], whole.schema)
    commit_files(table.refresh(), add_actions([action]))
    remove_and_add(
        table.refresh() and table, USER_SESSIONS, local(table), sessions(("b", 1)), [], Txn("app", 0, 1), "r"
    )
    assert [u for u, _, _ in rows(table)] == ["a", "c"]


def test_a_missing_key_is_not_hidden_by_a_duplicated_one(tmp_path):
    """One key held twice and another not at all: the counts add up, the keys do not."""
    write_deltalake(str(tmp_path / "s"), sessions(("a", 0), ("a", 0), ("b", 1)), partition_by=["session_date"])
    table = Table(str(tmp_path / "s"))
    with pytest.raises(KeysNotFound, match="2 of 2 keys"):
        remove_and_add(table, USER_SESSIONS, local(table), sessions(("a", 0), ("z", 1)), [], Txn("app", 0, 1), "r")


def test_a_max_kept_to_the_millisecond_still_finds_its_key():
    """Spark keeps timestamp statistics to the millisecond: a key 0.5 ms past a file's max is in it."""
    stamp = pa.timestamp("us", tz="UTC")
    files = pa.table(
        {
            "path": ["f"],
            "partition.session_date": pa.array([T0.date()]),
            "min.session_start": pa.array([T0], stamp),
            "max.session_start": pa.array([T0 + dt.timedelta(hours=1)], stamp),
        }
    )
    late = sessions(("b", 1)).set_column(
        1, "session_start", pa.array([T0 + dt.timedelta(hours=1, microseconds=500)], stamp)
    )
    assert holding_files(files, USER_SESSIONS, late).num_rows == 1
    later = late.set_column(1, "session_start", pa.array([T0 + dt.timedelta(hours=1, milliseconds=2)], stamp))
    assert holding_files(files, USER_SESSIONS, later).num_rows == 0


def test_a_commit_that_lands_during_the_rewrite_commits_nothing(table):
    """Another commit between the refresh and the commit: no retry on top of it, TableMoved."""
    table.refresh()
    before = table.current.version()
    write_deltalake(table.uri, sessions(("g", 2)), mode="append", partition_by=["session_date"])  # not seen
    with pytest.raises(TableMoved):
        remove_and_add(table, USER_SESSIONS, local(table), sessions(("a", 0)), [], Txn("app", 0, 1), "r")
    assert DeltaTable(table.uri).version() == before + 1  # only the other writer's commit
    assert table.reached("app") is None


def test_commits_after_the_refresh_do_not_shift_what_changed_since(table):
    """delta-rs lists history past the snapshot: commits newer than the refresh must not relabel."""
    version = table.refresh().version()
    write_deltalake(table.uri, sessions(("g", 2)), mode="append", partition_by=["session_date"])  # a change
    table.refresh()
    DeltaTable(table.uri).optimize.compact()  # lands after the refresh
    assert changed_since(table, version) == [f"WRITE@{version + 1}"]


def test_what_the_files_keep_is_written_again_in_a_file_per_owner(table):
    """The driver's rewrite keeps the owners' layout: a file per partition and owner, noting its
    owner, so that owner can rewrite it alone in a later batch."""
    buckets = user_buckets(2)
    gone = sessions(("a", 0), ("c", 5))  # b and d are kept, in one partition
    remove_and_add(table, USER_SESSIONS, local(table), gone, [], Txn("app", 0, 1), "r", buckets=buckets)
    rewritten = [
        a for a in pa.table(table.refresh().get_add_actions(flatten=True)).to_pylist() if "/part-r-" in f"/{a['path']}"
    ]
    assert len(rewritten) == len(set(user_partition(pa.chunked_array([["b", "d"]]), 2)))
    for action in rewritten:
        path = Path(table.uri) / action["path"]
        owner = buckets.bucket_of(pq.read_metadata(path).metadata)
        assert set(user_partition(pq.read_table(path)["user_id"], 2)) == {owner}
    assert [u for u, _, _ in rows(table)] == ["b", "d", "e", "f"]


def test_files_the_tasks_rewrote_are_removed_as_they_are(table):
    """Files the owners wrote again themselves: removed by path in the same commit, their rows
    among what the tasks added; the replaced keys elsewhere removed as before."""
    paths = [a["path"] for a in pa.table(table.refresh().get_add_actions(flatten=True)).to_pylist()]
    (first,) = [p for p in paths if "a" in pq.read_table(Path(table.uri) / p)["user_id"].to_pylist()]
    kept = sessions(("b", 1))  # the task replaced a, and wrote b again
    txn = Txn("app", 0, 1)
    done = remove_and_add(
        table, USER_SESSIONS, local(table), sessions(("e", 10)), new_files(table, kept), txn, "r", rewritten=[first]
    )
    assert done.files_rewritten_by_tasks == 1 and done.files_removed == 1
    assert [u for u, _, _ in rows(table)] == ["b", "c", "d", "f"]
