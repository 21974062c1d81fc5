"""The fault schedule of a lab run: drawn from a seed, so a run can be repeated exactly."""

from __future__ import annotations

import random
from dataclasses import dataclass


def _gold_points() -> tuple[str, ...]:
    """Each declared gold table's commit point (the sessions table's after its driver's rewrite),
    the table counting distinct users and the sessions table first, as they commit."""
    from eo.core.gold import counting_table, sessions_table, summed_tables
    from streaming.microbatch import commit_point

    first = [commit_point(t.name) for t in (counting_table(),) if t]
    sessions = [("events.after_sessions_rewritten", commit_point(t.name)) for t in (sessions_table(),) if t]
    return (*first, *(p for pair in sessions for p in pair), *(commit_point(t.name) for t in summed_tables()))


def _sink_points() -> tuple[str, ...]:
    """The PostgreSQL sinks' points, where the served source has them: they deliver the increments
    of the table that counts distinct users (eo/runtime/sinks/postgres.py)."""
    from eo.core.gold import counting_table

    if counting_table() is None:
        return ()
    return (
        "sink.at-least-once.after_commit",
        "sink.at-most-once.between",
        "sink.exactly-once.before_commit",
        "sink.exactly-once.after_commit",
    )


# Targeted kills: each crashes the driver at a named point in the commit path (lab/faults.py),
# most telling first: the first two are where the weaker guarantees repeat or lose a batch.
HOOKS = (
    *_sink_points(),
    "events.after_delta_commit",
    "events.after_files_written",
    "events.after_bronze_commit",
    *_gold_points(),
)


@dataclass(frozen=True)
class Fault:
    kind: str  # "kill" (SIGKILL after `delay` s of progress), "hook", "broker", "zombie"
    delay: float = 0.0  # seconds after the instance's first committed batch
    point: str = ""  # for hooks
    after: int = 1  # for hooks: the nth pass through the point fires


def draw(seed: int, kills: int, broker_restarts: int, zombies: int, hooks: tuple[str, ...] = HOOKS) -> list[Fault]:
    """`kills` driver crashes (at the hook points first, the rest at random moments), with
    broker restarts and zombies spread among them."""
    rng = random.Random(seed)
    hooks = list(hooks[:kills])
    faults = [Fault("hook", point=p) for p in hooks]
    faults += [Fault("kill", delay=round(rng.uniform(0.0, 4.0), 2)) for _ in range(kills - len(hooks))]
    rng.shuffle(faults)
    for kind, count in (("broker", broker_restarts), ("zombie", zombies)):
        for _ in range(count):
            faults.insert(rng.randint(1, len(faults)), Fault(kind, delay=round(rng.uniform(1.0, 4.0), 2)))
    return faults
