"""One micro-batch of the streaming query: its rows (streaming/plan.py) committed to every table.

    B rows -> bronze         (files written by the batch's tasks, appended by the driver)
    Q rows -> quarantine     (likewise)
    E rows -> silver         (likewise)
    E rows -> every declared gold table (eo/core/gold/), by its merge rule:
      Additive       what its transform of the new events adds to each key: accumulate
      Additive with distinct users
                     likewise, with the users new to each key counted by the sessions' owners
      Sessions       merged by the tasks that own the users: their files added, the stored
                     sessions they replace removed

Each commit is exactly-once on its own (eo/runtime/commits.py): it carries this instance's epoch and
the batch's position, a replay after a crash skips what was committed, and a stale instance
cannot commit at all. The appends and the additive tables are independent of the rest, so they
run at once; the table that counts distinct users commits before the sessions table, whose
stored sessions its distinct users were counted against (`add_gold`). After each table's commit
comes its kill point, `events.after_<table>_commit` (lab/faults.py).

One Spark job runs the whole batch: the reading, the engine states, the writing of the append
tables' files, gold's arithmetic on each task's new rows (streaming/task_writes.py), and the
sessions merged by the tasks that own their users (streaming/session_merge.py). The writers run
inside the query's plan, after the engine's state; the job's local property `task_writes.MARK`
tells them the batch's commit version. The driver
receives from the tasks the files' add actions, their metric sums (a row per metric key) and
the paths of the session files the owners wrote again (and the keys of replaced sessions held
in files laid out otherwise), never a record or a session. It adds the sums up and merges them
into gold with the same functions the batch rebuild uses (eo/core/transforms/), and removes the
rewritten files and the keys' rows (eo/runtime/key_removal.py); delta-rs commits in
milliseconds where a Spark MERGE costs seconds on this machine (docs/hot-path.md).

A batch that fails in the reading because of its data is cut down to the records that make it
fail (streaming/poison.py): they are recorded as poison and the query is restarted, so that
the batch is read again with them quarantined unread.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import NoReturn

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame

from eo.core.declaration import GoldTable
from eo.core.gold import counting_table, sessions_table, summed_tables
from eo.core.tables import BRONZE, GOLD, QUARANTINE, SILVER
from eo.runtime import commits, key_removal
from eo.runtime.commits import Txn
from eo.runtime.config import STREAM_QUERY, Settings
from eo.runtime.data_files import add_actions
from eo.runtime.environment import environment
from eo.runtime.fencing import Fence
from eo.runtime.hooks import hooks
from eo.runtime.maintenance_race import changed_since
from eo.runtime.reading import classify_records
from eo.runtime.sinks.postgres import PostgresSink
from streaming import poison, replays, stored_sessions, task_writes
from streaming.session_merge import user_buckets

# The tables one micro-batch writes: claimed with a new epoch before the first batch.
WRITES = (BRONZE, QUARANTINE, SILVER, *GOLD)
# The served source's tables merged by the owners (streaming/session_merge.py) and counted by them:
# None where its declarations have none (a source whose gold is additive only).
SESSIONS = sessions_table().table if sessions_table() else None
COUNTING = counting_table()  # its distinct users counted by the sessions' owners


def commit_point(table: str) -> str:
    """The named point right after a table's commit (a kill there: it committed, others maybe not)."""
    return f"events.after_{table}_commit"


class ReadAgain(RuntimeError):
    """The query restarts and reads the batch again (`reads_again`); what it committed is skipped."""


class PoisonIsolated(ReadAgain):
    """Records were recorded as poison: the batch is read again without them."""


class SessionsMoved(ReadAgain):
    """The sessions table changed between the tasks' read and the commit, other than by maintenance:
    their merge may rest on sessions that are gone, so the batch is merged again."""


def reads_again(error: Exception) -> bool:
    """Whether a failed query raised `ReadAgain` in its foreachBatch (Spark wraps it in its own
    exception: its text names the class)."""
    return any(kind.__name__ in str(error) for kind in (PoisonIsolated, SessionsMoved))


class StepTimer:
    """Seconds per step of one micro-batch, for the progress line."""

    def __init__(self) -> None:
        self.started = self.last = time.monotonic()
        self.steps: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.steps[name] = now - self.last
        self.last = now

    def __str__(self) -> str:
        laps = " ".join(f"{k} {v:.2f}" for k, v in self.steps.items())
        return f"{time.monotonic() - self.started:.2f} s: {laps}"


def _dates(column: pa.ChunkedArray) -> str:
    return ", ".join(f"'{d}'" for d in sorted({str(d) for d in pc.unique(column).to_pylist()}))


@dataclass
class MicroBatch:
    """The foreachBatch function of the streaming query."""

    settings: Settings
    fence: Fence  # this instance's epoch: every commit carries it, and a newer one stops this
    app_id: str  # the checkpoint's identity (streaming/checkpoint.py): a replay's commits are skipped
    sinks: list[PostgresSink] = field(default_factory=list)
    log_progress: bool = True
    # The records of a micro-batch, read again from the source (a batch's own frame cannot be
    # read without its reading): what a poison isolation bisects.
    records_of: Callable[[int], DataFrame] | None = None
    # Runs once a batch's tasks have read it, before any commit: raising stops it uncommitted
    # (streaming/source_loss.py `BatchGuard`, on a run that reads past accepted gaps).
    read_guard: Callable[[int], None] | None = None

    def __post_init__(self) -> None:
        self.tables = {t.name: environment(self.settings).table(t.name) for t in WRITES}
        # The last batch a restart may replay: the furthest any table got (a kill between commits).
        self.replay_until = max(
            (reached[1] for table in self.tables.values() if (reached := table.reached(self.app_id))), default=0
        )
        self.records = 0  # Kafka records this instance has committed, for progress lines
        # What reached the driver's memory from the tasks (make bench's driver_bytes_per_input_byte)
        self.driver_bytes = {"collected": 0}
        self.driver_parts: dict[str, int] = {}  # what the collected bytes were made of
        # The files the driver read to remove the replaced sessions' rows (eo/runtime/key_removal.py)
        self.rewrites = key_removal.Rewrite()

    def committed_already(self, txn: Txn) -> list[str]:
        """The tables whose files the tasks write that this batch is already committed to: a
        replay after a kill between its commits. Only a batch up to the furthest position a table
        held at the start can be one; no table is read for the others."""
        if txn.position > self.replay_until:
            return []
        written = (BRONZE, QUARANTINE, SILVER, *([SESSIONS] if SESSIONS else []))
        return sorted(t.name for t in written if not commits.should_commit(self.tables[t.name], txn))

    def txn(self, batch_id: int) -> Txn:
        """The batch's commits, each made only while this instance's epoch holds the lease."""
        return Txn(self.app_id, self.fence.epoch, batch_id + 1, fence=self.fence.check)

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        self.fence.check()
        timer = StepTimer()
        txn = self.txn(batch_id)
        sessions = stored_sessions.pinned(self.tables[SESSIONS.name]) if SESSIONS else None
        # The writers in the plan stamp bronze with it (ingest batch) and name their files by it.
        context = batch.sparkSession.sparkContext
        context.setLocalProperty(task_writes.MARK, str(txn.version))
        committed = self.committed_already(txn)
        context.setLocalProperty(replays.COMMITTED, ",".join(committed))
        try:  # one Spark job: reading, engine states, the append tables' files, gold's parts
            written = task_writes.finish_in_tasks(batch, self.settings, sessions, str(txn.version))
        except Exception as exc:
            if not poison.may_be_data(exc):
                raise
            self.isolate(batch, batch_id, exc)
        timer.lap("read+write")
        if self.read_guard is not None:
            self.read_guard(batch_id)
        hooks().point("events.after_files_written")  # files on storage, no table names them yet
        increments = written.metrics
        self.driver_bytes["collected"] += written.received_bytes
        for part, size in written.part_bytes.items():
            self.driver_parts[part] = self.driver_parts.get(part, 0) + size
        self.commit(written, increments, txn, timer, sessions.version if sessions else None)
        hooks().point("events.after_delta_commit")
        bronze_rows = written.rows[BRONZE.name]
        self.records += bronze_rows
        if self.sinks and COUNTING and increments.num_rows:
            delivered = increments.select([*COUNTING.key, "events", "revenue"]).to_pylist()
            for sink in self.sinks:
                sink.deliver(batch_id, [tuple(row.values()) for row in delivered])
            timer.lap("postgres")
        if self.log_progress:
            # The counted table's keys (the clickstream's metrics), else each additive table's.
            keyed = {"metrics": increments} if COUNTING else written.sums
            gold = ", ".join(f"{name} {rows.num_rows} keys" for name, rows in keyed.items())
            print(
                f"[{STREAM_QUERY}] batch {batch_id}: {bronze_rows} records -> "
                f"quarantine {written.rows[QUARANTINE.name]}, silver +{written.rows[SILVER.name]}, "
                f"duplicates {written.duplicates}, {gold} ({timer})"
                + (f"; a replay: {', '.join(committed)} had it already, not written again" if committed else ""),
                flush=True,
            )

    def commit(
        self, written: task_writes.Written, increments: pa.Table, txn: Txn, timer: StepTimer, read_at: int | None
    ) -> None:
        """The three appends, the additive tables and the counted gold (two commits, in order) at
        once; the first error, if any, is raised once all have ended. `read_at`: the sessions
        table's version the tasks read (None: the source has none)."""
        work = {
            **{name: self.appender(name, written, txn) for name in written.actions},
            **{table.name: self.summer(table, written, txn) for table in summed_tables()},
        }
        if SESSIONS is not None:
            work["gold"] = lambda: self.add_gold(written, increments, read_at, txn)
        all_at_once(work)
        timer.lap("commit")

    def appender(self, name: str, written: task_writes.Written, txn: Txn) -> Callable[[], bool]:
        def append() -> bool:
            committed = commits.append_files(self.tables[name], add_actions(written.actions[name]), txn)
            hooks().point(commit_point(name))  # a kill here: some tables committed, not others
            return committed

        return append

    def summer(self, table: GoldTable, written: task_writes.Written, txn: Txn) -> Callable[[], bool]:
        """An additive table's commit: the tasks' sums, added up, added to the stored ones."""

        def add() -> bool:
            committed = self.accumulate(table, written.sums[table.name], txn)
            hooks().point(commit_point(table.name))
            return committed

        return add

    def accumulate(self, table: GoldTable, rows: pa.Table, txn: Txn) -> bool:
        """Add `rows` to the table's stored values, read only in the partitions they touch."""
        column = table.partition_by[0] if table.partition_by else None
        where = f"t.{column} IN ({_dates(rows[column])})" if column and rows.num_rows else None
        return commits.accumulate(self.tables[table.name], rows, table.key, table.merge.values, txn, where)

    def add_gold(self, written: task_writes.Written, increments: pa.Table, read_at: int, txn: Txn) -> None:
        """The table that counts distinct users, then the sessions table. The distinct users in
        `increments` were counted against the sessions at `read_at`: a replay that finds this batch's sessions
        committed, against which every one of its users looks counted, finds its metrics committed
        too."""
        self.sessions_to_commit(read_at, txn)

        def metrics() -> None:
            if COUNTING is None:  # sessions, and no table counting their users
                return
            self.add_metrics(increments, txn)
            hooks().point(commit_point(COUNTING.name))  # a kill here: metrics committed, sessions not

        # The sessions' rewrite overlaps the metrics' commit; only the sessions' commit waits for it.
        with ThreadPoolExecutor(1) as pool:
            committed = pool.submit(metrics)
            self.merge_sessions(written, read_at, txn, after=committed.result)
            committed.result()  # a replay whose sessions were committed: the metrics' error, if any

    def sessions_to_commit(self, read_at: int, txn: Txn) -> bool:
        """Whether this batch's sessions are still to commit; SessionsMoved if the table moved
        since the tasks read it at `read_at`, other than by maintenance (which keeps the rows)."""
        table = self.tables[SESSIONS.name]
        if not commits.should_commit(table, txn):
            return False
        changed = changed_since(table, read_at)
        if changed:
            raise SessionsMoved(
                f"{SESSIONS.name} moved during the batch (version {read_at} -> {table.current.version()}: "
                f"{', '.join(changed)}); merging the batch again"
            )
        return True

    def add_metrics(self, increments: pa.Table, txn: Txn) -> bool:
        """The counted table's increments (its sums and the users new to its keys), added."""
        return self.accumulate(COUNTING, increments, txn)

    def merge_sessions(
        self, written: task_writes.Written, read_at: int, txn: Txn, after: Callable[[], object] = lambda: None
    ) -> bool:
        """Remove the stored sessions the tasks replaced and add the sessions they merged, in one
        commit, made once `after` returns. The tasks read the table at version `read_at`: should
        anything but maintenance (which keeps the rows) have committed since, the batch is read
        again."""
        if not self.sessions_to_commit(read_at, txn):
            return False
        table = self.tables[SESSIONS.name]
        filesystem = environment(self.settings).arrow_filesystem(table.uri)
        label = f"{txn.version}-rewrite"
        try:
            done = key_removal.remove_and_add(
                table,
                SESSIONS,
                filesystem,
                written.replaced,
                written.sessions,
                txn,
                label,
                before_commit=lambda: (hooks().point("events.after_sessions_rewritten"), after()),
                buckets=user_buckets(written.owners) if written.owners else None,
                rewritten=written.rewritten,
                read_at=read_at,
            )
        except key_removal.TableMoved as moved:
            raise SessionsMoved(
                f"{SESSIONS.name} moved during the commit ({moved}); merging the batch again"
            ) from moved
        hooks().point(commit_point(SESSIONS.name))  # a kill here: sessions committed, others maybe not
        self.rewrites += done
        return True

    # -- poison records ------------------------------------------------------------------------
    def dry_read(self, rows: DataFrame) -> None:
        """The reading of some records (one Spark job), with nothing written."""
        classify_records(rows.sparkSession, self.settings, rows).write.format("noop").mode("overwrite").save()

    def isolate(self, batch: DataFrame, batch_id: int, error: Exception) -> NoReturn:
        """Find the records that make the reading fail, record them, and have the query restart."""
        print(
            f"[{STREAM_QUERY}] batch {batch_id} failed ({poison.error_class(error)}); "
            "looking for the records that cause it, by bisection",
            flush=True,
        )
        if self.records_of is None:
            raise error
        began = time.monotonic()
        records = self.records_of(batch_id).persist()
        try:
            found = poison.find_poison(records, [self.dry_read])
            texts = poison.texts_of(records, found)
        finally:
            records.unpersist()
        if not found:
            print(f"[{STREAM_QUERY}] batch {batch_id}: no single record reproduces the failure; stopping", flush=True)
            raise error
        seconds = time.monotonic() - began
        poison.record_isolation(self.settings, batch_id, found, seconds, texts)
        where = ", ".join(f"{s.topic}/{s.partition}/{s.first} ({reason})" for s, reason in found)
        print(
            f"[{STREAM_QUERY}] batch {batch_id}: {len(found)} poison record(s) found in {seconds:.1f} s: {where}",
            flush=True,
        )
        raise PoisonIsolated(f"batch {batch_id}: {len(found)} poison record(s); reading it again without them")


def all_at_once(work: dict[str, Callable[[], object]]) -> None:
    """Independent table commits side by side; the first error, if any, is raised once all have ended."""
    with ThreadPoolExecutor(len(work)) as pool:
        futures = [pool.submit(step) for step in work.values()]
    for future in futures:
        future.result()
