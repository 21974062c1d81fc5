"""The Python workers of the tasks' writers (`mapInArrow`, streaming/task_writes.py), started
before the first batch needs them, and kept from idling out.

Spark starts a Python worker when a task first needs one (a daemon process, then a worker forked
for each concurrent task, which imports what the task's function needs), and ends a worker that
has been idle for a minute (PythonWorkerFactory's IDLE_WORKER_TIMEOUT_NS, not a setting). A cold
start paid that in its first batch's last stage (its first tasks 1.4 s, then 0.2 s: make bench,
recovery), and so did a standby that had waited more than a minute since its rehearsal (+0.6 s).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pyarrow as pa

PID = pa.schema([("pid", pa.int64())])


def _worker_pid(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    import os

    import streaming.task_writes  # noqa: F401  (what the tasks' writer imports, imported once here)

    for _ in batches:
        pass
    yield pa.RecordBatch.from_pylist([{"pid": os.getpid()}], schema=PID)


def use_workers(spark) -> set[int]:
    """A task per core through a Python worker: the process ids of the workers it used. Spark
    hands out idle workers first, so the ones started before are used again (and stay)."""
    cores = spark.sparkContext.defaultParallelism
    return {row.pid for row in spark.range(0, cores, 1, cores).mapInArrow(_worker_pid, "pid long").collect()}


def start_in_background(spark, log=print) -> threading.Thread:
    """`use_workers` on a thread of its own: a starting driver's workers start while it prepares
    the rest (fencing, checkpoint, plan). A failure here only means the first batch starts them."""

    def start() -> None:
        try:
            use_workers(spark)
        except Exception as exc:  # noqa: BLE001 (an optimisation: the batch would start them anyway)
            log(f"[streaming] Python workers not started ahead ({type(exc).__name__}); the first batch starts them")

    thread = threading.Thread(target=start, name="python-workers", daemon=True)
    thread.start()
    return thread
