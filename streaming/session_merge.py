"""The sessions table (the gold table declared with the Sessions rule) merged where the users are:
the last stage of a micro-batch's one Spark job.

Each task that writes the batch's files (streaming/task_writes.py) makes the sessions of its own
events and sends them, as intervals, to the task that owns their users: `user_partition`, a
stable hash of the user modulo the job's shuffle partitions, then `repartitionById`. That task
holds every new interval of its users. It reads the stored sessions they reach
(streaming/stored_sessions.py, at the version the driver pinned before the job), counts the users
new to each minute against them (`new_user_tuples`: a key of a user's new intervals that none of
the user's stored sessions holds), merges them (`merged_with`), and writes the merged sessions as
new files of the sessions table.

Files are laid out by owner (`user_buckets`: a file per partition and owner, noting its owner),
so an owner never opens another owner's files, and rewrites its own alone: a file of its own that
holds a session it replaced is written again, what it keeps beside the merged sessions, and the
owner returns its path. For a replaced session in any other file (the rebuild's, or one laid out
for another number of owners) it returns the key instead. The driver removes the rewritten files
and the keys' rows (it writes those files again, laid out by owner), and adds the new files, in
one commit (eo/runtime/key_removal.py): no session reaches it, only paths and keys.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from eo.core.gold import sessions_table
from eo.core.transforms.metrics import added_up, users_added
from eo.core.transforms.sessions import SESSION_KEY, merged_with, new_user_tuples
from eo.runtime.cli import NotReady
from eo.runtime.config import Settings
from eo.runtime.data_files import Buckets, write_files
from eo.runtime.key_removal import held
from streaming.parts import METRIC_PART, file_rows, is_part, packed, unpacked
from streaming.replays import committed_tables
from streaming.stored_sessions import Owner, SessionsAt, near_stored, schema_at

# The table merged as sessions (eo/core/gold/): None for a source whose gold has none.
SESSIONS = sessions_table().table if sessions_table() else None

# The owner hash, by name: every file of the sessions table records it beside its owner (data_files.Buckets),
# and its known answers pin what that name computes. Should a pandas release hash strings otherwise,
# owners would adopt the files of other owners' users (sessions doubled, distinct users counted
# twice): the stream refuses to start instead (`check_owner_hash`). Moving to another hash: a new
# name and its answers here; files noted with the old name are then read as anyone's.
OWNER_HASH = "pandas.util.hash_array/siphash-2-4/0123456789123456"
KNOWN_HASHES = {
    "u1": 2984610181246591869,
    "user-000042": 14056830043409501072,
    "ü-unicode": 15885138430709259195,
    "x" * 40: 17355273493356824715,
}


def _owner_hash(values: np.ndarray) -> np.ndarray:
    """OWNER_HASH of each string (an object array): pandas' hash is keyed by a constant, not by
    the process, so every task and process computes the same."""
    return pd.util.hash_array(values)


def owner_hash_values(users: list[str]) -> list[int]:
    return _owner_hash(np.asarray(users, dtype=object)).tolist()


def check_owner_hash() -> None:
    """NotReady when OWNER_HASH no longer computes its known answers (this pandas hashes otherwise)."""
    if SESSIONS is None:  # nothing is laid out by it
        return
    if owner_hash_values(list(KNOWN_HASHES)) != list(KNOWN_HASHES.values()):
        raise NotReady(
            f"the owner hash {OWNER_HASH} computes other values under pandas {pd.__version__}: {SESSIONS.name}'s "
            "files are laid out by the old ones. Install requirements.lock's pandas, or move to a new hash "
            "(OWNER_HASH and KNOWN_HASHES in streaming/session_merge.py; files of the old one are read as anyone's)"
        )


def user_partition(users: pa.Array | pa.ChunkedArray, partitions: int) -> np.ndarray:
    """The task that owns each user's sessions: OWNER_HASH modulo the owners, the same in every
    task and process."""
    flat = users.combine_chunks() if isinstance(users, pa.ChunkedArray) else users
    if flat.null_count:
        hashed = _owner_hash(np.asarray(flat.to_numpy(zero_copy_only=False), dtype=object))
    else:  # each distinct user hashed once: a task holds many rows per user
        distinct = pc.dictionary_encode(flat)
        each = _owner_hash(np.asarray(distinct.dictionary.to_numpy(zero_copy_only=False), dtype=object))
        hashed = each[distinct.indices.to_numpy()]
    return (hashed % np.uint64(partitions)).astype(np.int32)


def user_buckets(owners: int) -> Buckets:
    """The sessions table's files laid out by owner: a file per partition and owner of `owners`, so each
    owner of a later batch opens its own alone (streaming/stored_sessions.py `Owner`)."""
    return Buckets("user_id", owners, user_partition, OWNER_HASH)


def by_owner(rows: pa.Table, partitions: int, column: str = "user_id") -> Iterator[tuple[int, pa.Table]]:
    """A task's rows split by the owning task of their `column` (the same stable hash as users'):
    intervals by user, metric sums by campaign (`METRICS_OWNED_BY`)."""
    owners = pa.array(user_partition(rows[column], partitions))
    for owner in pc.unique(owners).to_pylist():
        yield owner, rows.filter(pc.equal(owners, owner))


# The writers' metric sums go to the owners by campaign, so that each owner adds up the sums of
# its campaigns' keys: sent to one task, every writer's sums met there (owner 0 took longer than
# the others in a warm batch, and its share grows with the writers; docs/history/hot-path-journal.md,
# "The Kafka read").
METRICS_OWNED_BY = "campaign_id"


def session_merger(
    settings: Settings, sessions: SessionsAt, owners: int, label: str, into: str | None = None
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The function each owning task runs (DataFrame.mapInArrow over OUT rows): file rows pass as
    they are; the S parts are merged into the sessions table and their users new to a minute counted,
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
        # The writers' metric sums of this task's campaigns leave it added up, with its users: one
        # row per key and task reaches the driver, not one per writer and another per owner.
        metrics = [unpacked(rows.filter(sums), "M")]
        sent = rows.filter(sessions_parts)
        context = TaskContext.get()
        # A user's sessions must all reach one owner: a part sent elsewhere would be merged twice.
        if sent.num_rows and pc.any(pc.not_equal(sent["_bucket"], context.partitionId())).as_py():
            raise RuntimeError(f"session parts for other owners reached owner {context.partitionId()}")
        intervals = unpacked(sent, "S")
        # A replay of a batch whose sessions are committed (and so its metrics, committed first)
        # writes no session file: no commit would name it, and no count of it is used.
        if intervals.num_rows and SESSIONS.name not in committed_tables(context):
            owner = Owner(user_buckets(owners), context.partitionId())
            yield from _merged(settings, sessions, label, into, owner, intervals, metrics)
        if any(m.num_rows for m in metrics):
            found = pa.concat_tables([m.select(METRIC_PART.names).cast(METRIC_PART) for m in metrics])
            yield from packed("M", added_up(found)).to_batches()

    return run


@dataclass(frozen=True)
class OwnerMerge:
    """What one owner did (see the module)."""

    files: list[dict]  # add actions of the files it wrote: the merged sessions and what its rewritten files keep
    replaced: pa.Table  # keys of the stored sessions it replaced in files not its own (REPLACED_PART)
    rewritten: list[str]  # its own files it wrote again (paths in the table)
    new_users: pa.Table  # the users new to each minute (`new_user_tuples`)


def merge_owned(at: SessionsAt, intervals: pa.Table, owner: Owner, read, write, tag: str) -> OwnerMerge:
    """One owner's merge of its users' new `intervals` with the sessions table at `at` (read through
    filesystem `read`), its files written through `write` (both rooted at the table's folder);
    `tag` starts their names."""
    reached = near_stored(at, intervals, read, owner)
    stored = reached.near
    if stored["metric_keys"].null_count:  # a row from before the column (streaming/takeover.py)
        raise RuntimeError(f"{SESSIONS.name} holds sessions without metric_keys: run `python -m ops.reset`")
    new_users = new_user_tuples(stored, intervals)
    merged, replaced = merged_with(stored, intervals)
    kept, rewritten, elsewhere = _rewritten(reached.own_files, replaced.select([*SESSION_KEY, "session_date"]))
    schema = schema_at(at)
    merged = merged.select(schema.names).cast(schema)
    rows = pa.concat_tables([merged, *(k.cast(schema) for k in kept)])
    # Every row is the owner's: its users' intervals and sessions, and its own files' rows.
    files = write_files(write, rows, SESSIONS.partition_by, tag, owner.buckets, bucket=owner.bucket)
    return OwnerMerge(files, elsewhere, rewritten, new_users)


def _rewritten(own_files: dict[str, pa.Table], replaced: pa.Table) -> tuple[list[pa.Table], list[str], pa.Table]:
    """The owner's own files that hold a replaced key: what they keep, and their paths; and the
    replaced keys held elsewhere (the driver removes those)."""
    kept, rewritten, found = [], [], []
    for path, rows in own_files.items():
        hit = held(rows, replaced.select(SESSION_KEY), SESSION_KEY)
        if pc.any(hit).as_py():
            kept.append(rows.filter(pc.invert(hit)))
            rewritten.append(path)
            found.append(rows.filter(hit).select(SESSION_KEY))
    if not found:
        return kept, rewritten, replaced
    found = pa.concat_tables(found)
    if found.num_rows != found.group_by(SESSION_KEY).aggregate([]).num_rows:  # removed twice, added once
        raise RuntimeError("a stored session is held twice in the owner's files")
    return kept, rewritten, replaced.join(found, SESSION_KEY, join_type="left anti")


def _merged(
    settings: Settings,
    sessions: SessionsAt,
    label: str,
    into: str | None,
    owner: Owner,
    intervals: pa.Table,
    metrics: list,
) -> Iterator[pa.RecordBatch]:
    """One owner's merge as the task's output: its files' add actions, the replaced keys held
    elsewhere (an R part) and its rewritten files (an X part); the users it counted new to a
    minute go into `metrics`."""
    from pyspark import TaskContext

    from eo.runtime.environment import environment

    tag = f"{label}-s{owner.bucket:05d}-{TaskContext.get().taskAttemptId()}"
    files = environment(settings).arrow_filesystem
    table = files(sessions.uri)
    done = merge_owned(sessions, intervals, owner, table, table if into is None else files(into), tag)
    if done.new_users.num_rows:
        metrics.append(users_added(done.new_users))
    yield from file_rows(done.files, SESSIONS.name).to_batches()
    if done.replaced.num_rows:
        yield from packed("R", done.replaced).to_batches()
    if done.rewritten:
        yield from packed("X", pa.table({"path": done.rewritten})).to_batches()
