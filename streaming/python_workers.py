"""The Python workers of the tasks' writers (`mapInArrow`, streaming/task_writes.py), kept from
idling out while a standby waits, and while the running job has no data.

Spark starts a Python worker when a task first needs one (a daemon process, then a worker forked
for each concurrent task, which imports what the task's function needs), and ends a worker that
has been idle for a minute (PythonWorkerFactory's IDLE_WORKER_TIMEOUT_NS, not a setting). A
standby that had waited more than a minute since its rehearsal paid that in its first batch's last
stage: its first tasks took several times as long as with the workers kept (make bench, recovery,
two runs each; docs/history/hot-path-journal.md, "Recovery").

A cold start pays it too. Starting the workers on a thread while the driver prepared shortened its
first batch, but the start-up before it grew by as much on 2 cores (the kill to the first commit did
not move), so it was left out (docs/history/hot-path-journal.md).

The running job idles too: the first batch after a lull of more than a minute paid the same
(make bench, recovery: after the standby's wait, that batch's first two writer tasks mostly waited
for their workers; docs/history/hot-path-journal.md, "Recovery"). `QuietWatch` tells when it is
quiet.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pyarrow as pa

PID = pa.schema([("pid", pa.int64())])
# Spark ends a Python worker idle for a minute: a tiny job this often uses them again.
KEEP_WARM_SECONDS = 30.0


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


def keep_warm(spark, who: str) -> None:
    """`use_workers`, as the optimisation it is: a failure is reported, never raised."""
    try:
        use_workers(spark)
    except Exception as exc:  # noqa: BLE001 - must not end the job that waits
        print(f"[{who}] keeping the Python workers warm failed ({type(exc).__name__}); going on", flush=True)


class QuietWatch:
    """When a running query has been quiet (no batch started, none running) for `every` seconds.

    `seen(batch_id, running)` is fed the query's last progress and status now and then; it answers
    True once per quiet stretch of `every` seconds, and starts counting again after that."""

    def __init__(self, every: float = KEEP_WARM_SECONDS, clock=time.monotonic) -> None:
        self.every, self.clock = every, clock
        self.last_batch: int | None = None
        self.since = clock()

    def seen(self, batch_id: int | None, running: bool) -> bool:
        now = self.clock()
        if running or batch_id != self.last_batch:
            self.last_batch, self.since = batch_id, now
            return False
        if now - self.since >= self.every:
            self.since = now
            return True
        return False
