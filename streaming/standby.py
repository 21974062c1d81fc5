"""A warm standby: a second driver that pays its start-up in advance and takes over the moment
the active one dies.

A restarted driver spends many seconds before its first batch (make bench, recovery;
docs/hot-path.md, "Current figures"): JVM and Spark session, then a first batch in a cold JVM. A
standby does that work
ahead of time (it rehearses the query: `rehearse` below), keeps it done while it waits (Spark
ends Python workers idle for a minute), and watches an OS lock that the active instance holds for
its whole life. When the active process dies (crash, OOM, SIGKILL),
the kernel releases the lock at once. The standby then takes new epochs, which fences the old
instance in case it was only paused, and starts the query from its checkpoint.

The lock is `flock` on a file next to the checkpoints, so it covers one machine. Correctness never
rests on it: two instances that both believe they are active are still kept apart by the epochs
(eo/runtime/fencing.py). The lock only decides when a standby should try.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from eo.core.gold import sessions_table
from eo.core.tables import BRONZE
from eo.runtime.active import ActiveLock
from eo.runtime.config import STREAM_QUERY, Settings
from eo.runtime.environment import environment
from eo.runtime.fencing import Lease
from eo.runtime.kafka_admin import end_offsets
from eo.runtime.spark import close_state_stores
from streaming import python_workers, stored_sessions, task_writes
from streaming.plan import Source, events_plan, kafka_records, start_checked

# The table merged as sessions (eo/core/gold/): None for a source whose gold has none.
SESSIONS = sessions_table().table if sessions_table() else None

QUERY = STREAM_QUERY
T = TypeVar("T")

# How long a standby leaves a lock it should not have taken, so the instance owed it gets it first.
YIELD_SECONDS = 1.0
# How often a waiting standby looks at the lock.
POLL_SECONDS = 0.1
KEEP_WARM_SECONDS = python_workers.KEEP_WARM_SECONDS  # the rehearsal's workers used again this often


def wait_for_turn(
    lock: ActiveLock,
    lease: Lease,
    jobs: list[str],
    log=print,
    keep_warm: Callable[[], None] | None = None,
    keep_warm_every: float = KEEP_WARM_SECONDS,
) -> None:
    """Block until the active instance is gone; return holding the lock. `keep_warm` runs every
    `keep_warm_every` seconds of the wait.

    The epochs seen before waiting tell whose exit the standby is waiting for. If they changed by
    the time the lock comes free, a newer instance started meanwhile and is the active one now.
    The standby then lets go and goes on waiting, for that instance.
    """
    seen = {job: lease.current(job) for job in jobs}
    quiet = python_workers.QuietWatch(keep_warm_every)  # a standby runs no batch: quiet throughout
    while True:
        while not lock.try_acquire():
            if keep_warm is not None and quiet.seen(None, running=False):
                keep_warm()
            time.sleep(POLL_SECONDS)
        now = {job: lease.current(job) for job in jobs}
        if now == seen:
            return
        log(f"[standby] a newer instance started while waiting ({seen} -> {now}); standing by for it")
        lock.release()
        seen = now
        time.sleep(YIELD_SECONDS)


# Records per partition a rehearsal reads: enough for the JIT to compile what a batch runs.
REHEARSAL_RECORDS = 5_000


@dataclass(frozen=True)
class Rehearsed:
    """What a rehearsal did, none of which is left."""

    records: int  # Kafka records read
    replayed: int  # of those, read again by the replay of its last batch
    files: int  # files its tasks wrote, then removed
    merged: int  # of those, the sessions' owners' files
    replaced: int  # stored sessions the owners found and merged with, in files not their own
    rewritten: int  # the owners' own files they wrote again, without the sessions they merged with


def rehearse(spark, settings: Settings) -> Rehearsed:
    """Run the query's own plan once, over the newest records, on a scratch checkpoint, its tasks
    writing their files into a scratch folder: a standby that takes over then finds Spark's
    generated code compiled, the JVM warm and the tasks' Python workers started (a first batch in
    a cold JVM costs seconds more than in a warm one). The sessions' owners run too: they read the
    real sessions table (pinned, as a batch does; the workers keep it open) and write their merged
    sessions into the scratch folder. Nothing reaches the lake, and nothing is committed.

    It reads in two batches, then replays the second from the scratch checkpoint in a new run, as a
    takeover replays the batch the dead instance was in: the engine state loads from the snapshots
    and change logs written. Without it, a takeover's first two loads of state 1 took several times
    as long as the other two; with it, less (make bench, recovery; docs/history/hot-path-journal.md,
    "Recovery")."""
    ends = end_offsets(settings)
    start = {settings.topic: {str(p): max(0, end - REHEARSAL_RECORDS) for p, end in ends.items()}}
    total = sum(end - offset for end, offset in zip(ends.values(), start[settings.topic].values(), strict=True))
    scratch = settings.checkpoint_path(f"{QUERY}-rehearsal")
    # Beside the seed, in the lake: where the tasks' filesystem reaches in every environment.
    files = f"{settings.source_lake}/_stream/{QUERY}-rehearsal"
    lake_files = environment(settings).lake_files
    goals = [task_writes.table_uri(settings, table.name, files) for table in task_writes.KIND_TABLES.values()]
    sessions = stored_sessions.pinned(environment(settings).table(SESSIONS.name)) if SESSIONS else None
    merged_into = f"{files}/{SESSIONS.name}" if SESSIONS else None
    for folder in (scratch, files):
        lake_files.delete_tree(folder)
    for folder in (*goals, *([merged_into] if merged_into else [])):  # a scratch folder has none
        lake_files.make_folder(folder)
    written: list[task_writes.Written] = []
    source = Source(starting_offsets=json.dumps(start), max_offsets_per_trigger=max(1, total // 2))

    def run(**trigger) -> None:
        records = kafka_records(spark, settings, source)
        plan = events_plan(spark, settings, records, rehearsal_files=files)
        writer = plan.writeStream.queryName(f"{QUERY}-rehearsal").foreachBatch(
            lambda rows, _batch: written.append(
                task_writes.finish_in_tasks(rows, settings, sessions, "rehearsal", merged_into)
            )
        )
        start_checked(writer.option("checkpointLocation", scratch).trigger(**trigger), plan).awaitTermination()

    try:
        run(availableNow=True)
        first = len(written)
        if first > 1:  # the last batch once more, by a new run whose stores load it
            close_state_stores()
            _forget_commit(lake_files, scratch, first - 1)
            # The uncommitted batch only, at its logged offsets, not what the topic got since (Spark
            # warns that the read limit is ignored under Trigger.Once: the offsets are already fixed).
            run(once=True)
    finally:
        # Its stores are still open, and their maintenance would upload a snapshot into the scratch
        # checkpoint after it is removed (a RocksDB error and stack trace in the standby's log).
        close_state_stores()
        for folder in (scratch, files):
            lake_files.delete_tree(folder)
    merged = sum(len(w.sessions) for w in written)
    return Rehearsed(
        records=sum(w.rows[BRONZE.name] for w in written),
        replayed=sum(w.rows[BRONZE.name] for w in written[first:]),
        files=sum(len(actions) for w in written for actions in w.actions.values()) + merged,
        merged=merged,
        replaced=sum(w.replaced.num_rows for w in written),
        rewritten=sum(len(w.rewritten) for w in written),
    )


def _forget_commit(lake_files, checkpoint: str, batch: int) -> None:
    """A checkpoint whose `batch` was planned and never committed (with its checksum file, if any)."""
    commits = f"{checkpoint.rstrip('/')}/commits"
    for name in lake_files.names(commits):
        if name in (str(batch), f".{batch}.crc"):
            lake_files.delete_file(f"{commits}/{name}")


def stand_by(spark, settings: Settings, lock: ActiveLock, plan: Callable[[], T | None]) -> T | None:
    """Rehearse, build the query's plan (`plan`; None: none yet), wait for the active instance to
    exit; the plan."""
    began = time.monotonic()
    rehearsed = rehearse(spark, settings)
    planned = plan()
    planning = "the query planned" if planned is not None else "no plan yet"
    print(
        f"[standby] warm in {time.monotonic() - began:.1f} s (rehearsed on {rehearsed.records:,} records, "
        f"{rehearsed.replayed:,} of them replayed as by a takeover; its tasks wrote {rehearsed.files} files, "
        f"removed since, {rehearsed.merged} of them sessions merged with "
        f"{rehearsed.replaced} stored ones, {rehearsed.rewritten} files of their own rewritten; {planning}); "
        f"waiting for the active instance to exit, its Python "
        f"workers kept warm every {KEEP_WARM_SECONDS:.0f} s",
        flush=True,
    )

    def keep_warm() -> None:
        python_workers.keep_warm(spark, "standby")

    wait_for_turn(lock, environment(settings).lease(), [QUERY], keep_warm=keep_warm)
    print("[standby] the active instance is gone: taking over", flush=True)
    return planned
