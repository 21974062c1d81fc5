"""A micro-batch's append tables written by its own Spark tasks; only metadata reaches the driver.

Each task of the batch's one Spark job writes its B, Q and E rows as Parquet files of bronze,
quarantine and silver (eo/runtime/data_files.py) and returns their add actions, plus the E and U
rows gold needs (events without their Kafka coordinates, and user tuples). The raw records,
bronze's bulk, never leave the executors. The driver then commits each table's files in one
delta-rs transaction with the batch's txn (eo/runtime/commits.py `append_files`); files that no
commit names (a batch killed before its commit, a task attempt that lost) are never read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame

from eo.core.tables import BRONZE, INGEST_BATCH, QUARANTINE, SILVER, TableDef
from eo.runtime.config import Settings
from eo.runtime.data_files import ACTION_FIELDS

UTC_MICROS = pa.timestamp("us", tz="UTC")
# What the driver needs of E and U rows for gold (eo/core/transforms/metrics.py, sessions.py).
GOLD_FIELDS = (
    ("_kind", pa.string()),
    ("event_id", pa.string()),
    ("event_type", pa.string()),
    ("event_time", UTC_MICROS),
    ("event_date", pa.date32()),
    ("user_id", pa.string()),
    ("session_id", pa.string()),
    ("campaign_id", pa.string()),
    ("ad_id", pa.string()),
    ("price", pa.decimal128(10, 2)),
    ("window_start", UTC_MICROS),
)
OUT = pa.schema([("_table", pa.string()), *ACTION_FIELDS, *GOLD_FIELDS])
SPARK_TYPES = {
    pa.string(): "string",
    pa.int64(): "bigint",
    UTC_MICROS: "timestamp",
    pa.date32(): "date",
    pa.decimal128(10, 2): "decimal(10,2)",
}
OUT_DDL = ", ".join(f"{f.name} {SPARK_TYPES[f.type]}" for f in OUT)
KIND_TABLES = {"B": BRONZE, "Q": QUARANTINE, "E": SILVER}


@dataclass(frozen=True)
class Target:
    """One append table as a task writes it."""

    table: TableDef
    uri: str
    schema: pa.Schema


@dataclass(frozen=True)
class Written:
    """What the tasks of one micro-batch wrote, and the rows gold needs."""

    actions: dict[str, list[dict]]  # per table: the add actions of its new files
    rows: dict[str, int]  # per table: rows written
    events: pa.Table
    users: pa.Table

    @property
    def duplicates(self) -> int:
        """Valid records whose event was already accepted (in this batch or before)."""
        return self.rows[BRONZE.name] - self.rows[QUARANTINE.name] - self.rows[SILVER.name]


def targets(settings: Settings, schemas: dict[str, pa.Schema]) -> dict[str, Target]:
    return {kind: Target(t, settings.table_path(t.name), schemas[t.name]) for kind, t in KIND_TABLES.items()}


def task_writer(
    settings: Settings, goals: dict[str, Target], mark: int | None, label: str
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The function each task runs (DataFrame.mapInArrow). `mark`: bronze's ingest batch (the
    batch's commit version), or None to leave it as the rows have it. `label` starts file names."""

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
        out: list[pa.Table] = []
        for code, goal in goals.items():
            part = rows.filter(pc.equal(kind, code))
            if part.num_rows == 0:
                continue
            if code == "B" and mark is not None:
                stamp = pa.repeat(pa.scalar(mark, pa.int64()), part.num_rows)
                part = part.set_column(part.schema.get_field_index(INGEST_BATCH), INGEST_BATCH, stamp)
            part = part.select(goal.schema.names).cast(goal.schema)
            filesystem = environment(settings).arrow_filesystem(goal.uri)
            actions = write_files(filesystem, part, goal.table.partition_by, tag)
            out.append(_rows_of(pa.Table.from_pylist([{**a, "_table": goal.table.name} for a in actions])))
        gold = rows.filter(pc.is_in(kind, value_set=pa.array(["E", "U"])))
        if gold.num_rows:
            out.append(_rows_of(gold.select([name for name, _ in GOLD_FIELDS])))
        for table in out:
            yield from table.to_batches()

    return run


def _rows_of(table: pa.Table) -> pa.Table:
    """`table`'s columns in OUT's shape, the others null."""
    columns = [
        table[f.name].cast(f.type) if f.name in table.column_names else pa.nulls(table.num_rows, f.type) for f in OUT
    ]
    return pa.Table.from_arrays(columns, schema=OUT)


def write_in_tasks(
    batch: DataFrame, settings: Settings, goals: dict[str, Target], mark: int | None, label: str
) -> Written:
    """One Spark job: the batch's reading and engine state, then its files, written by its tasks."""
    out = batch.mapInArrow(task_writer(settings, goals, mark, label), OUT_DDL).toArrow()
    files = out.filter(pc.is_valid(out["_table"]))
    actions: dict[str, list[dict]] = {goal.table.name: [] for goal in goals.values()}
    for action in files.select(["_table", *(name for name, _ in ACTION_FIELDS)]).to_pylist():
        actions[action.pop("_table")].append(action)
    rows = {name: sum(a["rows"] for a in found) for name, found in actions.items()}
    gold = out.filter(pc.is_valid(out["_kind"])).select([name for name, _ in GOLD_FIELDS])
    events = gold.filter(pc.equal(gold["_kind"], "E"))
    users = gold.filter(pc.equal(gold["_kind"], "U"))
    return Written(actions, rows, events, users)
