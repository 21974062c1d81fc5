"""Fault hooks: named points where the fault lab can crash this process on purpose.

    EO_FAULT_POINT=sink.exactly-once.before_commit  EO_FAULT_AFTER=3

makes the third pass through that point SIGKILL the whole driver (JVM and Python: the process
group), as a machine failure would. EO_FAULT_LOG, if set, gets a JSON line first, for the
lab's timeline. Unset, a point costs one dictionary lookup.
"""

from __future__ import annotations

import json
import os
import signal
import time

POINTS = (
    "events.after_delta_commit",  # every Delta table committed, streaming commit log not yet written
    "sink.exactly-once.before_commit",  # inside the PostgreSQL transaction, before COMMIT
    "sink.exactly-once.after_commit",  # committed, Spark has not recorded the batch
    "sink.at-least-once.after_commit",
    "sink.at-most-once.between",  # progress committed, rows not yet written
)

_passes: dict[str, int] = {}


def poisoned(raw):
    """EO_FAULT_POISON=<text>: a record whose bytes contain <text> fails its Spark task, as a
    record that trips a bug in the engine would (the poison-isolation tests). Unset: `raw` as is."""
    marker = os.environ.get("EO_FAULT_POISON")
    if not marker:
        return raw
    from pyspark.sql import functions as F

    hit = F.col("value").cast("string").contains(marker)
    failure = F.raise_error(F.lit(f"fault lab: poison record ({marker})"))
    return raw.withColumn("value", F.when(hit, failure).otherwise(F.col("value")))


def point(name: str) -> None:
    if os.environ.get("EO_FAULT_POINT") != name:
        return
    _passes[name] = _passes.get(name, 0) + 1
    if _passes[name] < int(os.environ.get("EO_FAULT_AFTER", "1")):
        return
    log = os.environ.get("EO_FAULT_LOG")
    if log:
        with open(log, "a") as fh:
            fh.write(json.dumps({"at": time.time(), "fault": "hook", "point": name, "pid": os.getpid()}) + "\n")
    os.killpg(os.getpgrp(), signal.SIGKILL)
