"""The stored sessions a micro-batch's new events can reach, found where the events are.

Each task of the batch reads user_sessions itself, at the version the driver saw before the job
(`SessionsAt`): only files whose statistics say a session there ends late enough to reach the
task's earliest new instant, only rows of the task's own users, and of those only the sessions
its own intervals reach (`near`). The driver receives those few, never a scan of the table: one
event three days late makes its task read that user's sessions of three days ago, and no other
user's. Sessions are the union over tasks: a stored session that two tasks reach arrives twice.

The driver commits against the version it refreshes at commit time. Between the two versions
only table maintenance can commit (OPTIMIZE, VACUUM: the same rows), since a newer instance
fences this one off; if the versions differ anyway, the driver reads the sessions itself
(`read_by_driver`), so a batch is never merged against sessions it did not see.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from eo.core.transforms.sessions import GAP, INTERVALS, near
from eo.runtime.commits import Table


@dataclass(frozen=True)
class SessionsAt:
    """user_sessions at one version, as the tasks of one micro-batch read it."""

    uri: str
    version: int
    storage_options: dict[str, str] | None = None


def pinned(table: Table) -> SessionsAt:
    """The table's latest version, refreshed now: what the batch's tasks will read."""
    current = table.refresh()
    return SessionsAt(table.uri, current.version(), table.storage_options)


def _reachable(dataset: ds.Dataset, schema: pa.Schema, intervals: pa.Table) -> tuple[pa.Table, int]:
    """Rows of the intervals' users whose session ends no earlier than the earliest new instant
    minus the gap (files skipped by their statistics), then the sessions the intervals reach; and
    the bytes of the rows read. Rows are kept batch by batch, so a task holds only its users'."""
    intervals = intervals.cast(INTERVALS)
    earliest = pc.subtract(pc.min(intervals["start"]), pa.scalar(GAP, pa.duration("us")))
    users = pc.unique(intervals["user_id"])
    kept, read = [], 0
    # The users are matched after the read: files that delta-rs merged may hold string views,
    # which a pushed-down string filter cannot compare with.
    for batch in dataset.to_batches(filter=ds.field("session_end") >= earliest):
        read += batch.nbytes
        rows = pa.Table.from_batches([batch]).cast(schema)
        kept.append(rows.filter(pc.is_in(rows["user_id"], value_set=users)))
    rows = pa.concat_tables(kept) if kept else schema.empty_table()
    return near(rows, intervals), read


# Each Python worker keeps its table between batches, brought to each batch's version.
_OPENED: dict[str, object] = {}


def _opened(at: SessionsAt):
    from deltalake import DeltaTable

    table = _OPENED.get(at.uri)
    if table is None:
        table = _OPENED[at.uri] = DeltaTable(at.uri, version=at.version, storage_options=at.storage_options)
    elif table.version() != at.version:
        table.load_as_version(at.version)
    return table


def near_stored(at: SessionsAt, intervals: pa.Table, filesystem) -> pa.Table:
    """In a task: the stored sessions its intervals reach, read at `at`'s version."""
    table = _opened(at)
    schema = pa.schema(table.schema().to_arrow())
    if intervals.num_rows == 0:
        return schema.empty_table()
    return _reachable(table.to_pyarrow_dataset(filesystem=filesystem), schema, intervals)[0]


def reached(found: pa.Table) -> pa.Table:
    """The tasks' stored sessions as one set: a session two tasks reached, once."""
    # The copies are equal rows (one version of the table), so distinct rows are distinct sessions.
    return found.group_by(found.column_names, use_threads=False).aggregate([]).select(found.column_names)


def read_by_driver(table: Table, intervals: pa.Table) -> tuple[pa.Table, int]:
    """The driver's own read (the version moved during the batch): the stored sessions the
    intervals reach, and the bytes read for them."""
    schema = table.schema()
    if intervals.num_rows == 0:
        return schema.empty_table(), 0
    return _reachable(table.current.to_pyarrow_dataset(), schema, intervals)
