"""The stored sessions a micro-batch's new events can reach, found where the events are.

The task that owns a set of users in the batch's job (streaming/session_merge.py) reads
the sessions table itself, at the version the driver saw before the job (`SessionsAt`): only files
whose statistics say they hold a session within the gap of one of its new intervals
(`reach_windows`: the intervals' spans, widened by the gap and joined), only rows of its own
users, and of those only the sessions its intervals reach (`near`). Files laid out by owner
(streaming/session_merge.py `user_buckets`) are opened only by their owner, which reads them
whole: it may write them again. No task and no driver scans
the table: one event three days late makes its owner open the files of three days ago as well
as today's, not those of the days between.

The driver commits against the version it refreshes at commit time. While the stream runs, the
commits that can land in between are table maintenance's (OPTIMIZE, VACUUM: the same rows); a
newer instance's claim fences this one off. Anything else in between, and the batch is read and
merged again (streaming/microbatch.py `SessionsMoved`), so a batch is never merged against
sessions it did not see.
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from eo.core.transforms.sessions import GAP, INTERVALS, TIME, near
from eo.runtime.commits import Table
from eo.runtime.data_files import Buckets


@dataclass(frozen=True)
class Owner:
    """The bucket of `buckets` a task owns: every user it reads sessions for is in it."""

    buckets: Buckets
    bucket: int


# At most this many spans of time in a task's read filter (`reach_windows`).
WINDOWS = 16


@dataclass(frozen=True)
class SessionsAt:
    """The sessions table at one version, as the tasks of one micro-batch read it."""

    uri: str
    version: int
    storage_options: dict[str, str] | None = None


def pinned(table: Table) -> SessionsAt:
    """The table's latest version, refreshed now: what the batch's tasks will read."""
    current = table.refresh()
    return SessionsAt(table.uri, current.version(), table.storage_options)


def reach_windows(intervals: pa.Table, most: int = WINDOWS) -> list[tuple[int, int]]:
    """The spans of time (microseconds) a stored session must touch to be reached: each interval
    widened by the gap, overlapping ones joined, and at most `most` of them (the closest joined
    first). A batch of recent events and a few days-late ones gives a span now and one per late
    day, so the files of the days between are never opened."""
    gap = int(GAP.total_seconds() * 1_000_000)
    lows = np.sort(intervals["start"].cast(pa.int64()).to_numpy()) - gap
    highs = np.sort(intervals["end"].cast(pa.int64()).to_numpy()) + gap
    # Sorting each bound on its own keeps the union of the spans: a span's end is at least its start.
    reach = np.maximum.accumulate(highs)
    opens = np.flatnonzero(lows[1:] > reach[:-1]) + 1
    starts, ends = lows[np.r_[0, opens]], reach[np.r_[opens - 1, len(lows) - 1]]
    if len(starts) > most:  # keep the widest holes
        holes = starts[1:] - ends[:-1]
        kept = np.sort(np.argsort(holes)[len(holes) - (most - 1) :])
        starts, ends = starts[np.r_[0, kept + 1]], ends[np.r_[kept, len(ends) - 1]]
    return [(int(lo), int(hi)) for lo, hi in zip(starts, ends, strict=True)]


def reach_filter(intervals: pa.Table) -> ds.Expression:
    """The read's filter: a session touching one of the spans (files pruned by their statistics)."""
    spans = [
        (ds.field("session_end") >= pa.scalar(lo, TIME)) & (ds.field("session_start") <= pa.scalar(hi, TIME))
        for lo, hi in reach_windows(intervals)
    ]
    return functools.reduce(operator.or_, spans)


@dataclass(frozen=True)
class Reached:
    """What an owner found: the stored sessions its intervals reach (`near`), and the whole rows
    of its own files among those it read (path -> rows), which it may rewrite (see the module)."""

    near: pa.Table
    own_files: dict[str, pa.Table]


def _split_by_owner(dataset: ds.Dataset, reach: ds.Expression, owner: Owner | None) -> tuple[ds.Dataset, list]:
    """The files the read can reach (by their statistics): those that may hold any user, as a
    dataset, and `owner`'s own files (eo/runtime/data_files.py `Buckets`); other owners' files
    are not opened beyond their footer."""
    if owner is None:
        return dataset, []
    shared, own = [], []
    for fragment in dataset.get_fragments(filter=reach):
        bucket = owner.buckets.bucket_of(fragment.metadata.metadata)
        if bucket is None:
            shared.append(fragment)
        elif bucket == owner.bucket:
            own.append(fragment)
    return ds.FileSystemDataset(shared, dataset.schema, dataset.format, dataset.filesystem), own


def _reachable(dataset: ds.Dataset, schema: pa.Schema, intervals: pa.Table, owner: Owner | None = None) -> Reached:
    """Rows of the intervals' users whose session touches the time the intervals can reach (files
    skipped by their statistics, and other owners' files skipped), then the sessions the intervals
    reach. Rows are kept batch by batch, so a task holds only its users'. The owner's own files
    are read whole: all their rows are its users'."""
    if intervals.num_rows == 0:
        return Reached(schema.empty_table(), {})
    intervals = intervals.cast(INTERVALS)
    users = pc.unique(intervals["user_id"])
    reach = reach_filter(intervals)
    shared, own = _split_by_owner(dataset, reach, owner)
    own_files = {fragment.path: fragment.to_table(schema=schema) for fragment in own}
    reached = [near(rows, intervals) for rows in own_files.values()]
    kept = []
    # The users are matched after the read: files that delta-rs merged may hold string views,
    # which a pushed-down string filter cannot compare with.
    for batch in shared.to_batches(filter=reach):
        rows = pa.Table.from_batches([batch]).cast(schema)
        kept.append(rows.filter(pc.is_in(rows["user_id"], value_set=users)))
    if kept:
        reached.append(near(pa.concat_tables(kept), intervals))
    return Reached(pa.concat_tables(reached) if reached else schema.empty_table(), own_files)


# Each Python worker keeps its table between batches (a worker runs one task at a time), brought
# to each batch's version; keyed by where the table is and how it is reached.
_OPENED: dict[tuple, object] = {}


def _opened(at: SessionsAt):
    from deltalake import DeltaTable

    key = (at.uri, tuple(sorted((at.storage_options or {}).items())))
    table = _OPENED.pop(key, None)  # out of the cache until it is known good
    if table is None:
        table = DeltaTable(at.uri, version=at.version, storage_options=at.storage_options)
    elif table.version() != at.version:
        table.load_as_version(at.version)
    _OPENED[key] = table
    return table


def schema_at(at: SessionsAt) -> pa.Schema:
    """The table's schema at `at`'s version, as a task opened it."""
    return pa.schema(_opened(at).schema().to_arrow())


def near_stored(at: SessionsAt, intervals: pa.Table, filesystem, owner: Owner | None = None) -> Reached:
    """In a task: the stored sessions its intervals reach, read at `at`'s version; `owner`: the
    bucket all the intervals' users are in (its own files are read whole, others' not at all)."""
    table = _opened(at)
    schema = pa.schema(table.schema().to_arrow())
    return _reachable(table.to_pyarrow_dataset(filesystem=filesystem), schema, intervals, owner)
