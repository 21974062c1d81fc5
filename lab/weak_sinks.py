"""The weaker delivery guarantees, for the fault lab to show what they lose or repeat.

- at-least-once: increments only; a batch replayed after a crash is applied again (duplicates);
- at-most-once: progress is committed before the increments; a crash in between loses the batch.

Both refuse to commit for a superseded epoch: fencing is not a delivery guarantee. They share the
exactly-once sink's tables and progress rows (eo/runtime/sinks/postgres.py), under their own names.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from eo.runtime.fencing import assert_epoch_in
from eo.runtime.hooks import hooks
from eo.runtime.sinks.postgres import GUARANTEE, Increment, PostgresSink, connect, metrics_ddl

WEAKER = ("at-least-once", "at-most-once")
GUARANTEES = (GUARANTEE, *WEAKER)


def create_tables(dsn: str) -> None:
    with connect(dsn) as conn:
        for guarantee in WEAKER:
            conn.execute(metrics_ddl(guarantee))


@dataclass
class AtLeastOnceSink(PostgresSink):
    guarantee = "at-least-once"

    def deliver(self, batch_id: int, increments: Iterable[Increment]) -> str:
        rows = list(increments)
        with connect(self.dsn) as conn:
            with conn.transaction():
                assert_epoch_in(conn, self.fence.job, self.fence.epoch)
                self._apply(conn, batch_id, rows)
            hooks().point("sink.at-least-once.after_commit")
        return f"committed {len(rows)} increments"


@dataclass
class AtMostOnceSink(PostgresSink):
    guarantee = "at-most-once"

    def deliver(self, batch_id: int, increments: Iterable[Increment]) -> str:
        rows = list(increments)
        with connect(self.dsn) as conn:
            with conn.transaction():
                if self._delivered(conn, batch_id):
                    return "skipped: progress says delivered"
                self._record_progress(conn, batch_id)
            hooks().point("sink.at-most-once.between")
            with conn.transaction():
                assert_epoch_in(conn, self.fence.job, self.fence.epoch)
                self._apply(conn, batch_id, rows)
        return f"committed {len(rows)} increments"


SINKS = {"at-least-once": AtLeastOnceSink, "at-most-once": AtMostOnceSink}


def weaker_sinks(dsn: str, fence, wanted: Iterable[str]) -> list[PostgresSink]:
    """The weaker sinks named in `wanted` (the exactly-once one is production's own)."""
    wanted = list(wanted)
    unknown = sorted(set(wanted) - set(GUARANTEES))
    if unknown:
        raise ValueError(f"unknown delivery guarantees {unknown}; choose from {GUARANTEES}")
    create_tables(dsn)
    return [SINKS[g](dsn, fence) for g in WEAKER if g in wanted]
