"""The tasks' Python workers kept (streaming/python_workers.py): the tiny job a waiting standby
runs every 30 s goes through the very workers the tasks used, so Spark never finds them a minute
idle and ends them.

Integration: a local Spark session, and its Python workers are real processes."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pytest

from streaming.python_workers import use_workers

pytestmark = pytest.mark.integration


def _pid(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    import os

    for _ in batches:
        pass
    yield pa.RecordBatch.from_pylist([{"pid": os.getpid()}], schema=pa.schema([("pid", pa.int64())]))


def test_keeping_warm_goes_through_every_worker_the_tasks_used(spark):
    cores = spark.sparkContext.defaultParallelism
    used = {r.pid for r in spark.range(0, 4 * cores, 1, 4 * cores).mapInArrow(_pid, "pid long").collect()}
    assert len(used) == cores, f"expected a Python worker per core, the tasks used {sorted(used)}"
    assert use_workers(spark) == used
