"""The fault lab's hooks: named points where it crashes this process on purpose, poison records,
and the weaker PostgreSQL sinks. Installed into a job by lab/hooked.py, or by a test.

    EO_FAULT_POINT=sink.exactly-once.before_commit  EO_FAULT_AFTER=3

makes the third pass through that point SIGKILL the whole driver (JVM and Python: the process
group), as a machine failure would. EO_FAULT_LOG, if set, gets a JSON line first, for the
lab's timeline. EO_FAULT_POISON=<text> makes a record whose bytes contain <text> fail its Spark
task, as a record that trips a bug in the engine would. EO_PG_GUARANTEES names the sinks
beside the exactly-once one (at-least-once, at-most-once).
"""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import dataclass, field

from eo.core.gold import DECLARED
from eo.runtime.hooks import Hooks
from lab.weak_sinks import weaker_sinks
from streaming.microbatch import commit_point

# After each declared gold table's commit (streaming/microbatch.py `commit_point`): it committed,
# the others maybe not. The sessions table's files are first rewritten by the driver
# ("events.after_sessions_rewritten"), then committed; the table counting distinct users commits
# before it.
GOLD_POINTS = tuple(commit_point(name) for name in DECLARED)

POINTS = (
    "events.after_files_written",  # the batch's tasks wrote its files, no table names them yet
    "events.after_bronze_commit",  # bronze committed, the other tables maybe not
    *GOLD_POINTS,
    "events.after_sessions_rewritten",  # the sessions table's files rewritten by the driver, not committed
    "events.after_delta_commit",  # every Delta table committed, streaming commit log not yet written
    "sink.exactly-once.before_commit",  # inside the PostgreSQL transaction, before COMMIT
    "sink.exactly-once.after_commit",  # committed, Spark has not recorded the batch
    "sink.at-least-once.after_commit",
    "sink.at-most-once.between",  # progress committed, rows not yet written
)


@dataclass
class FaultHooks(Hooks):
    kill_point: str | None = None
    kill_after: int = 1
    log: str | None = None
    poison: str | None = None
    guarantees: tuple[str, ...] = ()
    passes: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_env(cls) -> FaultHooks:
        wanted = [g.strip() for g in os.environ.get("EO_PG_GUARANTEES", "").split(",") if g.strip()]
        return cls(
            kill_point=os.environ.get("EO_FAULT_POINT") or None,
            kill_after=int(os.environ.get("EO_FAULT_AFTER", "1")),
            log=os.environ.get("EO_FAULT_LOG") or None,
            poison=os.environ.get("EO_FAULT_POISON") or None,
            guarantees=tuple(wanted),
        )

    def point(self, name: str) -> None:
        if name != self.kill_point:
            return
        self.passes[name] = self.passes.get(name, 0) + 1
        if self.passes[name] < self.kill_after:
            return
        if self.log:
            with open(self.log, "a") as fh:
                fh.write(json.dumps({"at": time.time(), "fault": "hook", "point": name, "pid": os.getpid()}) + "\n")
        os.killpg(os.getpgrp(), signal.SIGKILL)

    def source(self, raw):
        if not self.poison:
            return raw
        from pyspark.sql import functions as F

        hit = F.col("value").cast("string").contains(self.poison)
        failure = F.raise_error(F.lit(f"fault lab: poison record ({self.poison})"))
        return raw.withColumn("value", F.when(hit, failure).otherwise(F.col("value")))

    def sinks(self, dsn: str, fence) -> list:
        return weaker_sinks(dsn, fence, self.guarantees)
