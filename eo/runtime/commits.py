"""Exactly-once commits of a micro-batch's rows to Delta tables, written with delta-rs.

Every commit carries the writer's transaction id (Delta's `txn` action): the app id of the job,
and a version that packs the writer's epoch and its position, `epoch << 40 | position`, where
the position is the micro-batch id + 1. Before it commits, a writer reads the version its app
id last reached on the table (from the table's log, in this process: a few milliseconds):

- a newer epoch wrote it: a newer instance of the job has started, so this one is a zombie and
  must not commit (`Fenced`);
- the same or an older epoch already reached this position: the batch was committed before a
  crash and is being replayed, so the commit is skipped;
- otherwise it commits. A commit of the same app id that lands in between makes delta-rs refuse
  this one ("concurrent transaction"), so reading the version and committing are atomic.

A starting instance, a reset and a rebuild into the live tables claim each table with their new
epoch (`claim`): one commit that changes the table's metadata and, for the stream's app id, keeps
the position its predecessor reached. delta-rs refuses every commit built on a version before a
metadata change, so the fence holds at the write itself: a zombie paused anywhere between its
lease check (`Txn.fence`, made after it read the table) and its commit (an append, a MERGE, the
sessions' remove-and-add) commits nothing, whatever app id it commits with. The batches the
predecessor committed are still recognised as done.

Why delta-rs and not Spark for these commits: on this project's 2-core machines a Spark MERGE
takes seconds and a Spark append with a transaction id most of a second (Delta reconstructs the
table's state to read the id), whatever the data; delta-rs does either in milliseconds
(docs/hot-path.md, "Current figures").

One commit protocol for every writer of a live table: the stream, the maintenance that runs beside
it (OPTIMIZE, VACUUM: batch/maintenance.py) and the rebuild into main and the reset
(`replace_files`, `replace_range`) all commit with delta-rs, on object storage by S3's conditional
put (eo/cloud/s3.py). Spark's S3 log stores can overwrite a commit delta-rs made in between, so
Spark commits to no live table (docs/cloud.md, "One commit protocol").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from eo.runtime.fencing import Fenced, decode_version, encode_version
from eo.runtime.hooks import hooks
from eo.runtime.maintenance_race import beside_maintenance

T = TypeVar("T")


@dataclass(frozen=True)
class Txn:
    """Who commits what: the job's app id on the table, its epoch, and the batch's position.

    `fence` (the lease's `Fence.check`) runs right before every commit made with this Txn
    (`commit_properties`): a newer epoch under another app id is seen there, as after a reset
    of a lost checkpoint, whose claim cannot name the app id a zombie of the old stream commits with."""

    app_id: str
    epoch: int
    position: int
    fence: Callable[[], None] | None = field(default=None, compare=False, repr=False)

    @property
    def version(self) -> int:
        return encode_version(self.epoch, self.position)


@dataclass
class Table:
    """One Delta table as delta-rs sees it: its location and the storage options to reach it."""

    uri: str
    storage_options: dict[str, str] | None = None

    def __post_init__(self) -> None:
        self._table = None

    def refresh(self):
        """The table at its latest version (loaded once, then brought up to date incrementally)."""
        from deltalake import DeltaTable

        if self._table is None:
            self._table = DeltaTable(self.uri, storage_options=self.storage_options)
        else:
            self._table.update_incremental()
        return self._table

    @property
    def current(self):
        """The table as last refreshed: what a commit built on it checks for conflicts against."""
        return self._table if self._table is not None else self.refresh()

    def schema(self) -> pa.Schema:
        return pa.schema(self.current.schema().to_arrow())

    def surely_empty(self) -> bool:
        """True when the log alone shows the table holds no row (no file, or files whose
        statistics count none): a start on an empty lake skips a Spark job. False when it holds
        rows, or when a file without statistics leaves it unknown."""
        return self.records() == 0

    def records(self) -> int | None:
        """The rows the table holds, from its log's statistics; None when a file has none."""
        files = pa.table(self.refresh().get_add_actions(flatten=True))
        if files.num_rows == 0:
            return 0
        if "num_records" not in files.column_names or files["num_records"].null_count:
            return None
        return pc.sum(files["num_records"]).as_py()

    def reached(self, app_id: str) -> tuple[int, int] | None:
        """(epoch, position) the app id last committed on this table as last refreshed, or None."""
        version = self.current.transaction_version(app_id)
        return None if version is None else decode_version(version)


def commit_properties(txn: Txn):
    """The transaction id and history notes a commit carries; checks the lease first (`Txn.fence`),
    so no commit of a superseded epoch is made with them. Call it after the table was read for
    the commit: an epoch taken after the check claims the table after that read, which refuses
    the commit (`claim`)."""
    from deltalake import CommitProperties, Transaction

    if txn.fence is not None:
        txn.fence()

    return CommitProperties(
        app_transactions=[Transaction(app_id=txn.app_id, version=txn.version)],
        # Readable in the table's history: which instance committed which batch (and when).
        custom_metadata={"app_id": txn.app_id, "epoch": str(txn.epoch), "position": str(txn.position)},
    )


def should_commit(table: Table, txn: Txn) -> bool:
    """False for a replay of a committed batch; raises Fenced when a newer epoch holds the table.

    Refreshes the table: the commit that follows is checked against this version for conflicts."""
    table.refresh()
    reached = table.reached(txn.app_id)
    if reached is None:
        return True
    epoch, position = reached
    if epoch > txn.epoch:
        raise Fenced(f"{txn.app_id}: epoch {txn.epoch} was superseded by epoch {epoch} on {table.uri}")
    return position < txn.position


def conform(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """The rows in the table's own column order and types (Spark's Arrow output says `not null`
    for literals, Delta's schema says nullable; the values are the same)."""
    return rows.select(schema.names).cast(schema)


def _write(table: Table, rows: pa.Table, txn: Txn) -> None:
    from deltalake import write_deltalake

    current, rows = table.current, conform(rows, table.schema())  # read before the lease is checked
    properties = commit_properties(txn)
    hooks().point("delta.append")  # checked, not committed: a claim from here on refuses the commit
    write_deltalake(current, rows, mode="append", commit_properties=properties)


def append(table: Table, rows: pa.Table, txn: Txn) -> bool:
    """Append rows (none: an empty commit that still records the batch). Returns whether it committed."""
    if not should_commit(table, txn):
        return False
    _write(table, rows, txn)
    return True


def append_files(table: Table, actions: list, txn: Txn) -> bool:
    """Commit files that tasks already wrote (their delta-rs add actions, eo/runtime/data_files.py)
    as one append: only metadata moves here. None: an empty commit that still records the batch."""

    def commit() -> bool:
        if not should_commit(table, txn):
            return False
        current = table.current  # read before the lease is checked
        properties = commit_properties(txn)
        hooks().point("delta.append")  # checked, not committed: a claim from here on refuses the commit
        commit_files(current, actions, properties)
        return True

    return beside_maintenance(table, commit)


def commit_files(current, actions: list, commit_properties=None, mode: str = "append") -> None:
    """One delta-rs commit of already-written files to `current` (a DeltaTable), with or without
    a transaction id (the lab's unguarded baseline has none). `mode="overwrite"` removes every
    file the table had in the same commit."""
    current.create_write_transaction(
        actions,
        mode=mode,
        schema=current.schema(),
        partition_by=current.metadata().partition_columns or None,
        commit_properties=commit_properties,
    )


def _on(key: Sequence[str], partition_filter: str | None) -> str:
    condition = " AND ".join(f"t.{k} = s.{k}" for k in key)
    return f"{condition} AND {partition_filter}" if partition_filter else condition


def _merge(table: Table, rows: pa.Table, key: Sequence[str], txn: Txn, partition_filter: str | None):
    return table.current.merge(
        rows,
        _on(key, partition_filter),
        source_alias="s",
        target_alias="t",
        commit_properties=commit_properties(txn),
    )


def accumulate(
    table: Table,
    rows: pa.Table,
    key: Sequence[str],
    values: Sequence[str],
    txn: Txn,
    partition_filter: str | None = None,
) -> bool:
    """Add the rows' `values` to the stored ones, inserting new keys.

    Adding is not idempotent by itself: the transaction id is what makes it exactly-once, since a
    replayed batch finds its position reached and is skipped. A MERGE refused because maintenance
    compacted the files it read is merged again (`beside_maintenance`)."""
    return beside_maintenance(table, lambda: _accumulate(table, rows, key, values, txn, partition_filter))


def _accumulate(
    table: Table, rows: pa.Table, key: Sequence[str], values: Sequence[str], txn: Txn, partition_filter: str | None
) -> bool:
    if not should_commit(table, txn):
        return False
    if rows.num_rows == 0:
        _write(table, rows, txn)
        return True
    added = {c: f"t.{c} + s.{c}" for c in values}
    merger = _merge(table, conform(rows, table.schema()), key, txn, partition_filter)
    merger = merger.when_matched_update(added).when_not_matched_insert_all()
    hooks().point("delta.merge")  # checked, not committed: a claim from here on refuses the commit
    merger.execute()
    return True


def _as_owner(table: Table, owner: Txn | None, check: Callable[[], None] | None = None):
    """Commit properties for a write by the epoch that claimed the table (`owner`: its app id,
    epoch, and the position the table is left at), or None without an owner. Refreshes the table:
    the commit is checked against this version, so a claim of the owner's app id by a newer epoch
    in between refuses it. `check` (the lease's `Fence.check`) runs last, right before the commit:
    a stream started under another app id (after a reset, a new checkpoint) is seen there."""
    table.refresh()
    properties = None
    if owner is not None:
        held, _ = table.reached(owner.app_id) or (0, 0)
        if held > owner.epoch:
            raise Fenced(f"{owner.app_id}: epoch {owner.epoch} was superseded by epoch {held} on {table.uri}")
        properties = commit_properties(owner)
    if check is not None:
        check()
    return properties


@contextmanager
def _as_fenced(table: Table, owner: Txn | None) -> Iterator[None]:
    """A commit refused because a newer epoch claimed the table in between reads as Fenced."""
    try:
        yield
    except Exception as error:
        reached = table.refresh() and owner is not None and table.reached(owner.app_id)
        if reached and reached[0] > owner.epoch:
            raise Fenced(f"{owner.app_id}: epoch {reached[0]} claimed {table.uri} during the commit") from error
        raise


def replace_files(
    table: Table, actions: list, owner: Txn | None, append_only: bool = False, check: Callable[[], None] | None = None
) -> None:
    """The whole table replaced by files tasks wrote (one overwrite commit: delta-rs removes every
    file the table had). `append_only`: the table's append-only guard is lifted for this commit
    and set again, as for a full rebuild of silver."""
    properties = _as_owner(table, owner, check)
    if append_only:
        with _as_fenced(table, owner):
            table.current.alter.set_table_properties({"delta.appendOnly": "false"}, commit_properties=properties)
        properties = _as_owner(table, owner, check)
    try:
        with _as_fenced(table, owner):
            commit_files(table.current, actions, properties, mode="overwrite")
    finally:
        if append_only:  # set again whatever happened, by no owner: a newer epoch must not keep it lifted
            _guard_append_only(table)


def _guard_append_only(table: Table, attempts: int = 3) -> None:
    for attempt in range(attempts):  # a concurrent commit may refuse it once: the table moved on
        try:
            table.refresh().alter.set_table_properties({"delta.appendOnly": "true"})
            return
        except Exception:
            if attempt == attempts - 1:
                raise


def replace_range(
    table: Table, rows: pa.Table, predicate: str, owner: Txn | None, check: Callable[[], None] | None = None
) -> None:
    """The rows matching `predicate` (SQL) replaced by `rows`, in one commit."""
    from deltalake import write_deltalake

    rows = conform(rows, table.refresh() and table.schema())
    properties = _as_owner(table, owner, check)
    with _as_fenced(table, owner):
        write_deltalake(table.current, rows, mode="overwrite", predicate=predicate, commit_properties=properties)


# The table property a claim sets (`claim`): which epoch claimed the table last, and when. Its
# value differs at every claim, so every claim changes the table's metadata.
CLAIM_PROPERTY = "eo.fence.claim"
CLAIM_ATTEMPTS = 5


def claim(table: Table, app_id: str | None, epoch: int) -> int:
    """Record `epoch` on the table, for `app_id` keeping the position its predecessor reached.

    The fence at the write itself: the claim is one commit that changes the table's metadata
    (`CLAIM_PROPERTY`), and delta-rs refuses every commit built on a version before a metadata
    change ("Metadata changed since last commit"), whatever its app id or operation (append,
    MERGE, remove-and-add, overwrite). Every writer reads the table before it checks the lease
    (`should_commit`, `_as_owner`, then `commit_properties`), and every claimer takes its epoch
    before it claims: a zombie either sees the newer epoch at its check, or its commit is built
    on a version the claim follows and is refused. Why not claim each app id the table's history
    names: delta-rs lists no table's app ids, and a metadata change needs none of them.

    With `app_id` (None: a reset whose checkpoint is lost claims the tables for no app id), every
    later commit of an older epoch of it is refused before it is built, and a replay of the
    batches already committed is still skipped. Returns the position kept (0: nothing committed yet)."""
    from deltalake import CommitProperties, Transaction
    from deltalake.exceptions import CommitFailedError

    for attempt in range(CLAIM_ATTEMPTS):
        table.refresh()
        reached = table.reached(app_id) if app_id else None
        held, position = reached if reached else (0, 0)
        if held > epoch:
            raise Fenced(f"{app_id}: cannot claim {table.uri} with epoch {epoch}; epoch {held} holds it")
        txns = [Transaction(app_id=app_id, version=encode_version(epoch, position))] if app_id else None
        properties = CommitProperties(
            app_transactions=txns,
            custom_metadata={"app_id": app_id or "", "epoch": str(epoch), "position": str(position), "claim": "1"},
        )
        claimed = f"epoch {epoch} at {time.time_ns()}"
        try:
            table.current.alter.set_table_properties(
                {CLAIM_PROPERTY: claimed}, raise_if_not_exists=False, commit_properties=properties
            )
            return position
        except CommitFailedError:  # a commit of the app id landed in between: read the table again
            if attempt == CLAIM_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")
