"""A micro-batch's tables written by its own Spark tasks; only metadata reaches the driver.

Each task of the batch's one Spark job writes its B, Q and E rows as Parquet files of bronze,
quarantine and silver (eo/runtime/data_files.py) and returns their add actions, plus its share of
gold, added up from its own event rows (`gold_parts`, streaming/parts.py): one row per metric key,
which the driver adds up, and the sessions its events make, which go on to the tasks that own
their users and merge them into user_sessions (streaming/session_merge.py). No record, raw or
read, and no session goes from a task to the driver. The driver then commits each table's files in one
delta-rs transaction with the batch's txn (eo/runtime/commits.py `append_files`,
eo/runtime/key_removal.py); files that no commit names (a batch killed before its commit, a task
attempt that lost) are never read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame

from eo.core.tables import BRONZE, INGEST_BATCH, QUARANTINE, SILVER, USER_SESSIONS, TableDef
from eo.core.transforms.metrics import added_up, minute_metrics
from eo.core.transforms.sessions import as_intervals, sessionize, sessions_as_intervals
from eo.runtime.config import Settings
from eo.runtime.data_files import ACTION_FIELDS
from streaming.parts import OUT_DDL, file_rows, packed, part_sizes, unpacked
from streaming.session_merge import by_owner, session_merger
from streaming.stored_sessions import SessionsAt

KIND_TABLES = {"B": BRONZE, "Q": QUARANTINE, "E": SILVER}
NEW_TUPLE = "EU"  # an event row that brings a user tuple never counted (jvm/reader NewTuple)
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

    @property
    def duplicates(self) -> int:
        """Valid records whose event was already accepted (in this batch or before)."""
        return self.rows[BRONZE.name] - self.rows[QUARANTINE.name] - self.rows[SILVER.name]


def targets(settings: Settings, schemas: dict[str, pa.Schema], root: str | None = None) -> dict[str, Target]:
    """The append tables' files in the lake, or under `root` (a rehearsal's scratch folder)."""
    uri = (lambda name: f"{root}/{name}") if root else settings.table_path
    return {kind: Target(t, uri(t.name), schemas[t.name]) for kind, t in KIND_TABLES.items()}


def task_writer(
    settings: Settings, goals: dict[str, Target], mark: int | None, label: str, owners: int | None = None
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The function each task runs (DataFrame.mapInArrow). `mark`: bronze's ingest batch (the
    batch's commit version), or None to leave it as the rows have it. `label` starts file names.
    `owners`: how many tasks merge the sessions (their intervals split for them), or None."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        from eo.runtime.data_files import write_files
        from eo.runtime.environment import environment

        received = list(batches)
        if not received:
            return
        rows = pa.Table.from_batches(received)
        context = TaskContext.get()
        tag = f"{label}-{context.partitionId():05d}-{context.taskAttemptId()}"
        kind = rows["_kind"]
        parts = {code: rows.filter(pc.is_in(kind, value_set=pa.array(kinds))) for code, kinds in ROW_KINDS.items()}
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
        out += gold_parts(parts["E"], owners)
        for table in out:
            yield from table.to_batches()

    return run


def gold_parts(events: pa.Table, owners: int | None = None) -> list[pa.Table]:
    """A task's share of gold, in OUT's shape: its metric rows (distinct users: its EU rows' tuples)
    and its session intervals, split by the task that owns their users (`owners`: how many) or,
    without owners, in one part."""
    if events.num_rows == 0:
        return []
    metrics = minute_metrics(events, events.filter(pc.equal(events["_kind"], NEW_TUPLE)))
    intervals = sessions_as_intervals(sessionize(as_intervals(events)))
    if owners is None:
        return [packed("M", metrics), packed("S", intervals)]
    return [packed("M", metrics), *(packed("S", part, owner) for owner, part in by_owner(intervals, owners))]


def write_in_tasks(
    batch: DataFrame,
    settings: Settings,
    goals: dict[str, Target],
    mark: int | None,
    label: str,
    sessions: SessionsAt | None = None,
    sessions_into: str | None = None,
) -> Written:
    """One Spark job: the batch's reading and engine state, then its files, written by its tasks,
    and, given `sessions` (user_sessions at the version the driver commits against), the
    sessions merged by the tasks that own their users. `sessions_into`: where their files go, if
    not into user_sessions (a rehearsal's scratch folder)."""
    if sessions is None:
        out = batch.mapInArrow(task_writer(settings, goals, mark, label), OUT_DDL).toArrow()
    else:
        # As many owners as the job's shuffle partitions: the knob that sizes its other stages.
        owners = int(batch.sparkSession.conf.get("spark.sql.shuffle.partitions"))
        written = batch.mapInArrow(task_writer(settings, goals, mark, label, owners), OUT_DDL)
        merger = session_merger(settings, sessions, label, sessions_into)
        out = written.repartitionById(owners, "_bucket").mapInArrow(merger, OUT_DDL).toArrow()
    files = out.filter(pc.is_valid(out["_table"]))
    actions: dict[str, list[dict]] = {goal.table.name: [] for goal in goals.values()}
    actions[USER_SESSIONS.name] = []
    for action in files.select(["_table", *(name for name, _ in ACTION_FIELDS)]).to_pylist():
        actions[action.pop("_table")].append(action)
    merged = actions.pop(USER_SESSIONS.name)
    rows = {name: sum(a["rows"] for a in found) for name, found in actions.items()}
    metrics = added_up(unpacked(out, "M"))
    return Written(actions, rows, metrics, merged, unpacked(out, "R"), unpacked(out, "S"), out.nbytes, part_sizes(out))
