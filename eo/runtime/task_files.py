"""A DataFrame's rows written as a Delta table's data files by the Spark tasks that hold them; only
their add actions reach the driver, which commits them with delta-rs (eo/runtime/commits.py).

The stream writes its micro-batches this way (streaming/task_writes.py); the rebuild writes the
live tables this way too (`rebuild --target main`, a reset), so that every writer of a live table
commits by one protocol, delta-rs's (docs/cloud.md, "One commit protocol").
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame

from eo.runtime.config import Settings
from eo.runtime.data_files import ACTION_FIELDS

ACTIONS = pa.schema(list(ACTION_FIELDS))
ACTIONS_DDL = ", ".join(f"`{name}` {'string' if kind == pa.string() else 'bigint'}" for name, kind in ACTION_FIELDS)
FLUSH_ROWS = 1_000_000  # rows a task holds before it writes them: bounded memory on any table


def written_by_tasks(
    rows: DataFrame, settings: Settings, uri: str, schema: pa.Schema, partition_by: list[str], label: str
) -> list[dict]:
    """Write `rows` (conformed to `schema`) under the table at `uri`; returns every file's add
    action (eo/runtime/data_files.py ACTION_FIELDS). `label` starts the files' names."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        from eo.runtime.data_files import write_files
        from eo.runtime.environment import environment

        context = TaskContext.get()
        tag = f"{label}-{context.partitionId():05d}-{context.taskAttemptId()}"
        filesystem = environment(settings).arrow_filesystem(uri)
        held: list[pa.RecordBatch] = []
        flushes = 0

        def flush() -> Iterator[pa.RecordBatch]:
            nonlocal flushes
            part = pa.Table.from_batches(held).select(schema.names).cast(schema)
            held.clear()
            flushes += 1
            actions = write_files(filesystem, part, partition_by, f"{tag}-{flushes}")
            yield from pa.Table.from_pylist(actions, schema=ACTIONS).to_batches()

        for batch in batches:
            held.append(batch)
            if sum(b.num_rows for b in held) >= FLUSH_ROWS:
                yield from flush()
        if held:
            yield from flush()

    return rows.mapInArrow(run, ACTIONS_DDL).toArrow().to_pylist()
