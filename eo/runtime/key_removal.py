"""Rows removed by key and files added, in one exactly-once commit: a MERGE whose new rows the
tasks already wrote.

The stream's tasks merge the sessions table themselves (streaming/session_merge.py): they write the
merged sessions as new files, write again the files of their own that held what they replaced
(returning their paths: removed as they are), and return the keys of the stored sessions they
replaced in any other file. The driver finds the files that hold these keys (partition values,
then the range column's statistics), writes what they keep again as one file per partition (and
owner, if given a layout), and commits the removes, the rewritten files and the tasks' files in
one delta-rs transaction carrying the batch's txn. Every key must be found once. Maintenance may
commit in between (OPTIMIZE moves rows between files, VACUUM deletes unnamed files): the commit is
planned again on what it left, a file the tasks rewrote that a compaction took included. Any other
commit in between means the table changed in a way the tasks did not see: nothing is committed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import astuple, dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from eo.core.tables import TableDef
from eo.runtime.commits import Table, Txn, commit_files, commit_properties
from eo.runtime.data_files import Buckets, add_actions, write_files
from eo.runtime.hooks import hooks
from eo.runtime.maintenance_race import beside_maintenance

READERS = 4  # files read at once


# Delta lets writers keep timestamp statistics to the millisecond (Spark does): a max may be up
# to 999 microseconds below the true one.
STATS_SLACK_US = 999


class KeysNotFound(RuntimeError):
    """Keys to remove that the table does not hold (once each): the commit would be wrong."""


class TableMoved(RuntimeError):
    """Another commit landed while the driver rewrote the files: nothing was committed."""


@dataclass(frozen=True)
class Rewrite:
    """What the driver did to remove the keys: files read, their bytes, files removed (what they
    kept is written again)."""

    files_read: int = 0
    bytes_read: int = 0
    files_removed: int = 0
    files_rewritten_by_tasks: int = 0

    def __add__(self, other: Rewrite) -> Rewrite:
        return Rewrite(*(a + b for a, b in zip(astuple(self), astuple(other), strict=True)))


def holding_files(files: pa.Table, definition: TableDef, keys: pa.Table) -> pa.Table:
    """The table's files (delta-rs `get_add_actions(flatten=True)`) that may hold one of `keys`:
    in a partition a key is in, and whose range column's min and max enclose one of the keys'
    values."""
    if keys.num_rows == 0 or files.num_rows == 0:
        return files.slice(0, 0)
    mask = pa.repeat(pa.scalar(True), files.num_rows)
    for column in definition.partition_by:
        wanted = pc.unique(keys[column])
        mask = pc.and_(mask, pc.is_in(files[f"partition.{column}"], value_set=wanted))
    column = definition.range_column
    values = np.sort(keys[column].cast(pa.int64()).to_numpy())
    # A file without statistics may hold any value.
    lows = _bound(files, f"min.{column}", np.iinfo(np.int64).min)
    highs = _bound(files, f"max.{column}", np.iinfo(np.int64).max - STATS_SLACK_US) + STATS_SLACK_US
    inside = np.searchsorted(values, highs, "right") > np.searchsorted(values, lows, "left")
    return files.filter(pc.and_(mask, pa.array(inside)))


def _bound(files: pa.Table, name: str, unknown: int) -> np.ndarray:
    """A statistic of every file as integers (times: microseconds), `unknown` where it is missing
    (the column too, when no file has it)."""
    if name not in files.column_names:
        return np.full(files.num_rows, unknown, dtype=np.int64)
    return pc.fill_null(files[name].cast(pa.int64()), unknown).to_numpy()


def _file_rows(filesystem, schema: pa.Schema, definition: TableDef, row: dict) -> pa.Table:
    """One data file's rows in the table's schema, its partition values taken from the log, as
    Delta readers do (some writers also keep the partition columns in the file: Spark's did)."""
    rows = pq.read_table(row["path"], filesystem=filesystem)
    for column in definition.partition_by:
        if column in rows.column_names:
            rows = rows.drop_columns([column])
        value = pa.scalar(row[f"partition.{column}"], schema.field(column).type)
        rows = rows.append_column(column, pa.repeat(value, rows.num_rows))
    return rows.select(schema.names).cast(schema)


def _found_once(definition: TableDef, keys: pa.Table, hits: list[pa.Table]) -> None:
    """Every key held by exactly one row of the files read, or KeysNotFound naming a few."""
    found = pa.concat_tables(hits) if hits else keys.slice(0, 0)
    counts = found.group_by(keys.column_names).aggregate([([], "count_all")])
    once = counts.filter(pc.equal(counts["count_all"], 1)).drop_columns(["count_all"])
    wrong = keys.join(once, keys.column_names, join_type="left anti")
    if wrong.num_rows or keys.num_rows != once.num_rows:
        raise KeysNotFound(
            f"{definition.name}: {wrong.num_rows} of {keys.num_rows} keys to remove are not held by exactly one "
            f"row, e.g. {wrong.slice(0, 3).to_pylist()}"
        )


def _text(value) -> str | None:
    return None if value is None else str(value)


def _still_there(active: pa.Table, paths: Sequence[str]) -> tuple[list[dict], pa.Table, list[str]]:
    """The log's rows of `paths` still in the table, the table's other files, and the paths no
    longer in it (a compaction since the tasks read it: what they wrote again may not be all the
    file's rows are now part of)."""
    named = pc.is_in(active["path"], value_set=pa.array(list(paths), pa.string()))
    found = active.filter(named).to_pylist()
    missing = sorted(set(paths) - {row["path"] for row in found})
    return found, active.filter(pc.invert(named)), missing


def _keys_of_moved(table: Table, read_at: int, paths: list[str], definition: TableDef, filesystem) -> pa.Table:
    """The keys (and partition values) of the rows held by files that left the table since
    version `read_at` (compacted by OPTIMIZE: their rows now sit in other files). The files are
    still on storage: VACUUM keeps what a version of the retention still names."""
    from deltalake import DeltaTable

    then = pa.table(
        DeltaTable(table.uri, version=read_at, storage_options=table.storage_options).get_add_actions(flatten=True)
    )
    rows = then.filter(pc.is_in(then["path"], value_set=pa.array(paths, pa.string()))).to_pylist()
    if len(rows) != len(paths):
        raise TableMoved(
            f"{definition.name}: {len(paths) - len(rows)} files the tasks rewrote were never in version {read_at}"
        )
    schema, columns = table.schema(), [*definition.key, *definition.partition_by]
    held = [_file_rows(filesystem, schema, definition, row).select(columns) for row in rows]
    return pa.concat_tables(held) if held else schema.empty_table().select(columns)


def _remove(row: dict, definition: TableDef, now: int):
    from deltalake.transaction import RemoveAction

    partition = {c: _text(row[f"partition.{c}"]) for c in definition.partition_by}
    return RemoveAction(row["path"], True, now, row["size_bytes"], partition)


def held(rows: pa.Table, keys: pa.Table, key: list[str]) -> pa.Array:
    """Which of `rows` have one of `keys`: joined on the key columns alone (a join carries no
    list, such as the sessions table's metric_keys)."""
    indexed = rows.select(key).append_column("_row", pa.array(np.arange(rows.num_rows)))
    hit = indexed.join(keys, key, join_type="inner")["_row"].to_numpy()
    mask = np.zeros(rows.num_rows, dtype=bool)
    mask[hit] = True
    return pa.array(mask)


def remove_and_add(
    table: Table,
    definition: TableDef,
    filesystem,
    keys: pa.Table,
    added: list[dict],
    txn: Txn,
    label: str,
    before_commit: Callable[[], None] = lambda: None,
    buckets: Buckets | None = None,
    rewritten: Sequence[str] = (),
    read_at: int | None = None,
) -> Rewrite:
    """Remove the rows of `keys` (the table's key columns and partition columns) and add the files
    `added` (add actions, eo/runtime/data_files.py), in one commit with `txn`, built on the table
    as the caller's `should_commit` refreshed it. `filesystem` is rooted at the table; `label`
    starts the rewritten files' names; `before_commit` runs once they are written (a kill point
    of the fault lab: files on storage that no commit names); `buckets`: the rewritten files'
    layout (eo/runtime/data_files.py). `rewritten`: files the tasks wrote again themselves (what
    they keep is among `added`): removed as they are.

    Maintenance beside the stream (OPTIMIZE, VACUUM: the same rows, other files) never fails the
    commit: a file the tasks rewrote that a compaction took since `read_at` (the version they
    read) has its rows' older copies removed where they are now, and a commit refused because
    maintenance landed first is planned again on the new version. Any other commit in between
    raises TableMoved, and the caller reads the batch again."""
    from deltalake.exceptions import CommitFailedError

    def plan_and_commit() -> Rewrite:
        return _remove_and_add(table, definition, filesystem, keys, added, txn, label, before_commit, buckets,
                               rewritten, read_at)  # fmt: skip

    try:
        return beside_maintenance(table, plan_and_commit)
    except CommitFailedError as error:
        raise TableMoved(f"{definition.name}: another commit landed during the rewrite ({error})") from error


def _remove_and_add(
    table: Table,
    definition: TableDef,
    filesystem,
    keys: pa.Table,
    added: list[dict],
    txn: Txn,
    label: str,
    before_commit: Callable[[], None],
    buckets: Buckets | None,
    rewritten: Sequence[str],
    read_at: int | None,
) -> Rewrite:
    schema, key = table.schema(), list(definition.key)
    columns = [*key, *definition.partition_by]
    keys = keys.select(columns).cast(pa.schema([schema.field(c) for c in columns]))
    active = pa.table(table.current.get_add_actions(flatten=True))
    gone, others, moved = _still_there(active, rewritten)
    if moved:
        if read_at is None:
            raise TableMoved(f"{len(moved)} files the tasks rewrote are no longer in the table, e.g. {moved[0]}")
        # Their rows sit in the files a compaction made: those copies go; what the tasks kept is in `added`.
        print(f"[commit] {definition.name}: {len(moved)} files the tasks rewrote were compacted meanwhile; "
              "their rows' older copies removed where they went")  # fmt: skip
        keys = pa.concat_tables([keys, _keys_of_moved(table, read_at, moved, definition, filesystem).cast(keys.schema)])
    files = holding_files(others, definition, keys).to_pylist()
    with ThreadPoolExecutor(READERS) as pool:  # many small files: their reads overlap
        found = list(pool.map(lambda row: _file_rows(filesystem, schema, definition, row), files))
    now = int(time.time() * 1000)
    actions, kept, hits = [_remove(row, definition, now) for row in gone], [], []
    for row, rows in zip(files, found, strict=True):
        removed = held(rows, keys.select(key), key)
        if not pc.any(removed).as_py():
            continue
        left = rows.filter(pc.invert(removed)).select(schema.names)
        hits.append(rows.filter(removed).select(key))
        actions.append(_remove(row, definition, now))
        kept.append(left)
    _found_once(definition, keys.select(key), hits)
    # What the touched files keep, written again as one file per partition (and owner): the small
    # files the tasks add each batch are compacted as they are touched, not only by OPTIMIZE.
    written = write_files(filesystem, pa.concat_tables(kept), definition.partition_by, label, buckets) if kept else []
    before_commit()
    # No retry inside delta-rs: a commit that landed since the refresh may have moved rows this
    # plan did not see (`remove_and_add` looks at what it was, and plans again or gives up).
    current = table.current  # the version planned on, read before the lease is checked
    properties = commit_properties(txn)
    properties.max_commit_retries = 0
    hooks().point("delta.remove_and_add")  # checked, not committed: a claim from here on refuses the commit
    commit_files(current, [*actions, *add_actions(written + added)], properties)
    return Rewrite(len(files), sum(row["size_bytes"] for row in files), len(actions) - len(gone), len(gone))
