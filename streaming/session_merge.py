"""user_sessions merged where the users are: the last stage of a micro-batch's one Spark job.

Each task that writes the batch's files (streaming/task_writes.py) makes the sessions of its own
events and sends them, as intervals, to the task that owns their users: `user_partition`, a
stable hash of the user modulo the job's shuffle partitions, then `repartitionById`. That task
holds every new interval of its users. It reads the stored sessions they reach
(streaming/stored_sessions.py, at the version the driver pinned before the job), counts the users
new to each minute against them (`new_user_tuples`: a key of a user's new intervals that none of
the user's stored sessions holds), merges them (`merged_with`), writes the merged sessions as new
files of user_sessions, and returns their add actions, the distinct users it counted and the keys
of the stored sessions they replace. The driver removes those keys' rows
and adds the files in one commit (eo/runtime/key_removal.py): no session reaches it, only the
keys of those it must remove.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from eo.core.tables import USER_SESSIONS
from eo.core.transforms.metrics import added_up, users_added
from eo.core.transforms.sessions import SESSION_KEY, merged_with, new_user_tuples
from eo.runtime.config import Settings
from eo.runtime.data_files import Buckets
from streaming.parts import METRIC_PART, file_rows, is_part, packed, unpacked
from streaming.stored_sessions import Owner, SessionsAt, near_stored, schema_at


def user_partition(users: pa.Array | pa.ChunkedArray, partitions: int) -> np.ndarray:
    """The task that owns each user's sessions: the same in every task and process (pandas' hash of
    a string is keyed by a constant, not by the process)."""
    hashed = pd.util.hash_array(np.asarray(users.to_numpy(zero_copy_only=False), dtype=object))
    return (hashed % np.uint64(partitions)).astype(np.int32)


def user_buckets(owners: int) -> Buckets:
    """user_sessions' files laid out by owner: row group by row group, the users of one owner of
    `owners`, so each owner of a later batch reads its own row groups alone
    (streaming/stored_sessions.py `Owner`)."""
    return Buckets("user_id", owners, user_partition)


def by_owner(intervals: pa.Table, partitions: int) -> Iterator[tuple[int, pa.Table]]:
    """A task's intervals split by the task that owns their users."""
    owners = pa.array(user_partition(intervals["user_id"], partitions))
    for owner in pc.unique(owners).to_pylist():
        yield owner, intervals.filter(pc.equal(owners, owner))


def session_merger(
    settings: Settings, sessions: SessionsAt, owners: int, label: str, into: str | None = None
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The function each owning task runs (DataFrame.mapInArrow over OUT rows): file rows pass as
    they are; the S parts are merged into user_sessions and their users new to a minute counted,
    and those go out added up with the M parts it received, as one M part (see the module).
    `owners`: how many tasks own users. `label` starts file names. `into`: where the merged files
    go, if not into the table (a rehearsal's scratch folder: it reads the real table, and writes
    nothing there)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        received = list(batches)
        if not received:
            return
        rows = pa.Table.from_batches(received)
        sessions_parts, sums = is_part(rows, "S"), is_part(rows, "M")
        yield from rows.filter(pc.invert(pc.or_(sessions_parts, sums))).to_batches()
        # The writers' metric sums that reached this task leave it added up, with its users: one
        # row per key and task reaches the driver, not one per writer and another per owner.
        metrics = [unpacked(rows.filter(sums), "M")]
        sent = rows.filter(sessions_parts)
        context = TaskContext.get()
        # A user's sessions must all reach one owner: a part sent elsewhere would be merged twice.
        if sent.num_rows and pc.any(pc.not_equal(sent["_bucket"], context.partitionId())).as_py():
            raise RuntimeError(f"session parts for other owners reached owner {context.partitionId()}")
        intervals = unpacked(sent, "S")
        if intervals.num_rows:
            owner = Owner(user_buckets(owners), context.partitionId())
            yield from _merged(settings, sessions, label, into, owner, intervals, metrics)
        if any(m.num_rows for m in metrics):
            found = pa.concat_tables([m.select(METRIC_PART.names).cast(METRIC_PART) for m in metrics])
            yield from packed("M", added_up(found)).to_batches()

    return run


def _merged(
    settings: Settings,
    sessions: SessionsAt,
    label: str,
    into: str | None,
    owner: Owner,
    intervals: pa.Table,
    metrics: list,
) -> Iterator[pa.RecordBatch]:
    """One owner's merge (see the module): the merged files' add actions and the replaced keys
    (an R part); the users it counted new to a minute go into `metrics`."""
    from pyspark import TaskContext

    from eo.runtime.data_files import write_files
    from eo.runtime.environment import environment

    tag = f"{label}-s{owner.bucket:05d}-{TaskContext.get().taskAttemptId()}"
    files = environment(settings).arrow_filesystem
    table = files(sessions.uri)
    stored = near_stored(sessions, intervals, table, owner)
    if stored["metric_keys"].null_count:  # a row from before the column (streaming/takeover.py)
        raise RuntimeError("user_sessions holds sessions without metric_keys: run `python -m ops.reset`")
    tuples = new_user_tuples(stored, intervals)
    if tuples.num_rows:
        metrics.append(users_added(tuples))
    merged, replaced = merged_with(stored, intervals)
    schema = schema_at(sessions)
    target = table if into is None else files(into)
    rows = merged.select(schema.names).cast(schema)
    actions = write_files(target, rows, USER_SESSIONS.partition_by, tag, owner.buckets)
    yield from file_rows(actions, USER_SESSIONS.name).to_batches()
    if replaced.num_rows:
        yield from packed("R", replaced.select([*SESSION_KEY, "session_date"])).to_batches()
