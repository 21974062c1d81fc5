"""A micro-batch's tables written by its own Spark tasks; only metadata reaches the driver.

The writer (`plan_writer`) runs inside the streaming query's plan, right after the engine's state
(streaming/plan.py): each of its tasks writes its B, Q and E rows as Parquet files of bronze,
quarantine and silver (eo/runtime/data_files.py) and returns the files' add actions and its
share of gold (`gold_parts`, streaming/parts.py): the metric sums of its events and the sessions
they make, as intervals, one part per task that owns their campaigns (sums) or their users
(intervals). The batch's one Spark job then ends in `finish_in_tasks`: the sessions merged by
the tasks that own their users, which also count the users new to each minute
(streaming/session_merge.py). No record, raw or read, and no session goes from a task to the
driver. The driver commits each table's files in one delta-rs
transaction with the batch's txn (eo/runtime/commits.py `append_files`,
eo/runtime/key_removal.py); files that no commit names (a batch killed before its commit, a task
attempt that lost) are never read.

The writer learns its batch's commit version from the job's local property `MARK`, which the
foreachBatch function sets before it runs the job (streaming/microbatch.py), and from
`replays.COMMITTED` the tables a replayed batch is already committed to (a kill between its commits):
it writes no file for those, which no commit would name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame

from eo.core.declaration import added_up as sums_added_up
from eo.core.gold import counting_table, sessions_table, summed_tables
from eo.core.tables import BRONZE, INGEST_BATCH, QUARANTINE, SILVER, TableDef
from eo.core.transforms.metrics import NO_USERS, added_up, minute_metrics
from eo.core.transforms.sessions import as_intervals, sessionize, sessions_as_intervals
from eo.runtime.config import Settings
from eo.runtime.data_files import ACTION_FIELDS
from streaming.parts import (
    OUT_DDL,
    PARTS,
    file_rows,
    packed,
    packed_sums,
    part_sizes,
    unpacked,
    unpacked_sums,
)
from streaming.replays import committed_tables
from streaming.session_merge import METRICS_OWNED_BY, by_owner, session_merger
from streaming.stored_sessions import SessionsAt

KIND_TABLES = {"B": BRONZE, "Q": QUARANTINE, "E": SILVER}
NEW_TUPLE = "EU"  # the lab's unguarded job: an event row that counts its user (no state)
MARK = "eo.batch_mark"  # the job's local property: the batch's commit version (bronze's ingest batch)
# The kinds of row (streaming/plan.py) each table's files take: an EU row is an event too.
ROW_KINDS = {"B": ("B",), "Q": ("Q",), "E": ("E", NEW_TUPLE)}


@dataclass(frozen=True)
class Target:
    """One append table as a task writes it."""

    table: TableDef
    uri: str
    schema: pa.Schema


@dataclass(frozen=True)
class Written:
    """What the tasks of one micro-batch wrote, and what gold needs of its new rows."""

    actions: dict[str, list[dict]]  # per append table: the add actions of its new files
    rows: dict[str, int]  # per append table: rows written
    metrics: pa.Table  # the increments: minute_metrics of the batch's new events and user tuples
    sessions: list[dict]  # the merged sessions' files the tasks wrote (none without `sessions`)
    replaced: pa.Table  # the keys of the stored sessions they replace (parts.REPLACED_PART)
    intervals: pa.Table  # without `sessions` only: the batch's sessions as intervals (INTERVALS)
    received_bytes: int  # the Arrow bytes the driver collected from the tasks
    part_bytes: dict[str, int]  # of which, what each kind of content took (`part_sizes`)
    owners: int | None = None  # how many tasks owned the users (their files' layout, `user_buckets`)
    rewritten: list[str] = field(default_factory=list)  # the sessions table's files the owners wrote again
    sums: dict[str, pa.Table] = field(default_factory=dict)  # per additive table without distinct users

    @property
    def duplicates(self) -> int:
        """Valid records whose event was already accepted (in this batch or before)."""
        return self.rows[BRONZE.name] - self.rows[QUARANTINE.name] - self.rows[SILVER.name]


def targets(settings: Settings, schemas: dict[str, pa.Schema], root: str | None = None) -> dict[str, Target]:
    """The append tables' files in the lake, or under `root` (a rehearsal's scratch folder)."""
    return {kind: Target(t, table_uri(settings, t.name, root), schemas[t.name]) for kind, t in KIND_TABLES.items()}


def table_uri(settings: Settings, name: str, root: str | None = None) -> str:
    """Where an append table's files go: the lake, or a folder under `root` (a rehearsal's)."""
    return f"{root}/{name}" if root else settings.table_path(name)


def _files(settings: Settings, goals: dict[str, Target], parts: dict[str, pa.Table], mark: int | None, tag: str):
    """The task's B, Q and E rows (`parts`, by ROW_KINDS code) as files of their tables: their
    add actions, in OUT's shape. `mark`: bronze's ingest batch, or None to leave it as it is."""
    from eo.runtime.data_files import write_files
    from eo.runtime.environment import environment

    out: list[pa.Table] = []
    for code, goal in goals.items():
        part = parts[code]
        if part.num_rows == 0:
            continue
        if code == "B" and mark is not None:
            stamp = pa.repeat(pa.scalar(mark, pa.int64()), part.num_rows)
            part = part.set_column(part.schema.get_field_index(INGEST_BATCH), INGEST_BATCH, stamp)
        part = part.select(goal.schema.names).cast(goal.schema)
        filesystem = environment(settings).arrow_filesystem(goal.uri)
        actions = write_files(filesystem, part, goal.table.partition_by, tag)
        out.append(file_rows(actions, goal.table.name))
    return out


def _by_kind(rows: pa.Table) -> dict[str, pa.Table]:
    kind = rows["_kind"]
    return {code: rows.filter(pc.is_in(kind, value_set=pa.array(kinds))) for code, kinds in ROW_KINDS.items()}


def _received(batches: Iterator[pa.RecordBatch]):
    """A task's rows as one table, with its TaskContext; None for a task that received none."""
    from pyspark import TaskContext

    received = list(batches)
    return (pa.Table.from_batches(received), TaskContext.get()) if received else None


def _tag(label: str, context) -> str:
    """How a task attempt's files start: the label, the task's partition and its attempt."""
    return f"{label}-{context.partitionId():05d}-{context.taskAttemptId()}"


def task_writer(
    settings: Settings, goals: dict[str, Target], mark: int | None, label: str
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The lab's unguarded job (lab/bench/unguarded.py): each task writes its rows' files and
    returns them with its gold, in OUT's shape (DataFrame.mapInArrow). `label` starts file names."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        received = _received(batches)
        if received is None:
            return
        rows, context = received
        parts = _by_kind(rows)
        out = _files(settings, goals, parts, mark, _tag(label, context))
        out += gold_parts(parts["E"])
        for table in out:
            yield from table.to_batches()

    return run


def plan_writer(
    settings: Settings, goals: dict[str, Target], owners: int, rehearsal: bool = False
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The function each writing task of the streaming plan runs (see the module), over B, Q and E
    rows and the seed's rows (`_seed`: in the state, never written). Returns OUT rows.
    `owners`: how many tasks merge the sessions. `rehearsal`: a dry run, which has no batch mark."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        received = _received(batches)
        if received is None:
            return
        rows, context = received
        mark, label = _mark(context, rehearsal)
        seed = pc.fill_null(rows["_seed"], False)
        if pc.any(seed).as_py():  # only while a seed is read: the filter copies every row
            rows = rows.filter(pc.invert(seed))
        parts = _by_kind(rows)
        committed = committed_tables(context)
        to_write = {code: goal for code, goal in goals.items() if goal.table.name not in committed}
        out = _files(settings, to_write, parts, mark, _tag(label, context))
        out += gold_parts(parts["E"], owners, counted=NO_USERS)
        for table in out:
            yield from table.to_batches()

    return run


def _mark(context, rehearsal: bool) -> tuple[int | None, str]:
    """The batch's commit version and the label its files start with."""
    if rehearsal:
        return None, f"rehearsal{context.getLocalProperty('streaming.sql.batchId') or ''}"
    mark = context.getLocalProperty(MARK)
    if mark is None:  # bronze must record every record's ingest batch: never write without it
        raise RuntimeError(f"the stream's writer ran without its batch mark (local property {MARK})")
    return int(mark), mark


def gold_parts(events: pa.Table, owners: int | None = None, counted: pa.Table | None = None) -> list[pa.Table]:
    """A task's share of gold, in OUT's shape: its metric rows and its session intervals, split by
    the tasks that own their campaigns and their users (`owners`: how many) or, without owners,
    in one part each.
    `counted`: the user tuples whose users these rows count (METRIC_KEY + user_id, each once);
    by default those of its EU rows."""
    if events.num_rows == 0:
        return []
    # Every additive table without distinct users: its transform's rows, added up, to the driver.
    added = [packed_sums(t, sums_added_up(t, t.transform(events))) for t in summed_tables()]
    if sessions_table() is None:  # a source whose gold is additive only: no owners, no intervals
        return added
    if counted is None:
        counted = events.filter(pc.equal(events["_kind"], NEW_TUPLE))
    metrics = minute_metrics(events, counted) if counting_table() else PARTS["M"].empty_table()
    intervals = sessions_as_intervals(sessionize(as_intervals(events)))
    if owners is None:
        return [packed("M", metrics), packed("S", intervals), *added]
    sums = [packed("M", part, owner) for owner, part in by_owner(metrics, owners, METRICS_OWNED_BY)]
    return [*sums, *(packed("S", part, owner) for owner, part in by_owner(intervals, owners)), *added]


def write_in_tasks(batch: DataFrame, settings: Settings, goals: dict[str, Target], label: str) -> Written:
    """The lab's unguarded job: one Spark job, each task writing its rows' files and returning its
    gold (its sessions as intervals, to the driver)."""
    out = batch.mapInArrow(task_writer(settings, goals, None, label), OUT_DDL).toArrow()
    return _collected(out, [goal.table.name for goal in goals.values()])


def finish_in_tasks(
    new: DataFrame, settings: Settings, sessions: SessionsAt | None, label: str, sessions_into: str | None = None
) -> Written:
    """The end of the batch's one Spark job, over the writers' rows (the plan's, streaming/plan.py):
    the sessions merged, and the users new to each minute counted, by the tasks that own their
    users, against `sessions` (the sessions table at the version the driver commits against).
    `label` starts the merged files' names; `sessions_into`: where they go, if not into the table
    (a rehearsal's scratch folder). Without a sessions table (`sessions` None) the writers' rows
    are the batch's whole result."""
    if sessions is None:
        return _collected(new.toArrow(), [table.name for table in KIND_TABLES.values()])
    # As many owners as the job's shuffle partitions: the knob that sizes its other stages.
    owners = int(new.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    merger = session_merger(settings, sessions, owners, label, sessions_into)
    out = new.repartitionById(owners, "_bucket").mapInArrow(merger, OUT_DDL).toArrow()
    return _collected(out, [table.name for table in KIND_TABLES.values()], owners)


def _collected(out: pa.Table, tables: list[str], owners: int | None = None) -> Written:
    files = out.filter(pc.is_valid(out["_table"]))
    sessions = sessions_table().name if sessions_table() else "<no sessions table>"
    actions: dict[str, list[dict]] = {name: [] for name in tables}
    actions[sessions] = []
    for action in files.select(["_table", *(name for name, _ in ACTION_FIELDS)]).to_pylist():
        actions[action.pop("_table")].append(action)
    merged = actions.pop(sessions)
    rows = {name: sum(a["rows"] for a in found) for name, found in actions.items()}
    metrics = added_up(unpacked(out, "M"))
    replaced, intervals = unpacked(out, "R"), unpacked(out, "S")
    rewritten = unpacked(out, "X")["path"].to_pylist()
    sums = {t.name: sums_added_up(t, unpacked_sums(out, t)) for t in summed_tables()}
    return Written(
        actions, rows, metrics, merged, replaced, intervals, out.nbytes, part_sizes(out), owners, rewritten, sums
    )
