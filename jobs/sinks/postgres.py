"""The per-minute metrics delivered into PostgreSQL, under a chosen delivery guarantee.

Each micro-batch delivers *increments*: the events and revenue its newly accepted events add
to each (campaign, type, minute). Increments are not idempotent, so the guarantee is visible:

- exactly-once: increments, the progress row (job, batch id, epoch) and the epoch check share
  one transaction; a replayed batch finds its progress row and is skipped (the seeds'
  "transactional updates" architecture, for an external database);
- at-least-once: increments only; a batch replayed after a crash is applied again (duplicates);
- at-most-once: progress is committed before the increments; a crash in between loses the batch.

The two weaker settings exist to show, in the fault lab, what they lose or repeat. Every mode
refuses to commit for a superseded epoch (fencing is not a delivery guarantee).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from jobs import faults
from jobs.fencing import Fence, assert_epoch_in

GUARANTEES = ("exactly-once", "at-least-once", "at-most-once")
Increment = tuple[str, str, object, int, object]  # campaign_id, event_type, window_start, events, revenue


def table_name(guarantee: str) -> str:
    return "metrics_" + guarantee.replace("-", "_")


DDL = [
    *(
        f"""CREATE TABLE IF NOT EXISTS {table_name(g)} (
            campaign_id TEXT NOT NULL, event_type TEXT NOT NULL, window_start TIMESTAMPTZ NOT NULL,
            events BIGINT NOT NULL, revenue NUMERIC(18,2) NOT NULL,
            PRIMARY KEY (campaign_id, event_type, window_start))"""
        for g in GUARANTEES
    ),
    """CREATE TABLE IF NOT EXISTS sink_progress (
        sink TEXT NOT NULL, job TEXT NOT NULL, batch_id BIGINT NOT NULL, epoch BIGINT NOT NULL,
        committed_at TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (sink, job))""",
    # Every commit, with the epoch that made it: the evidence that no zombie wrote.
    """CREATE TABLE IF NOT EXISTS sink_commits (
        sink TEXT NOT NULL, job TEXT NOT NULL, batch_id BIGINT NOT NULL, epoch BIGINT NOT NULL,
        rows INTEGER NOT NULL, committed_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp())""",
]


def configured() -> tuple[str | None, list[str]]:
    """EO_PG_DSN (a secret: environment only) and EO_PG_GUARANTEES (default exactly-once)."""
    dsn = os.environ.get("EO_PG_DSN")
    wanted = [g.strip() for g in os.environ.get("EO_PG_GUARANTEES", "exactly-once").split(",") if g.strip()]
    unknown = sorted(set(wanted) - set(GUARANTEES))
    if unknown:
        raise ValueError(f"unknown delivery guarantees {unknown}; choose from {GUARANTEES}")
    return dsn, wanted


def connect(dsn: str):
    import psycopg

    # Timestamps travel as UTC wall-clock values, as Spark's session time zone has them.
    return psycopg.connect(dsn, autocommit=False, options="-c timezone=UTC")


def create_tables(dsn: str) -> None:
    with connect(dsn) as conn:
        for statement in DDL:
            conn.execute(statement)


def reset(dsn: str, job: str) -> None:
    """Forget everything delivered (a `streaming reset` starts the sinks afresh)."""
    with connect(dsn) as conn:
        for g in GUARANTEES:
            conn.execute(f"TRUNCATE {table_name(g)}")
        conn.execute("DELETE FROM sink_progress WHERE job = %s", (job,))


@dataclass
class PostgresSink:
    dsn: str
    guarantee: str
    fence: Fence

    @property
    def table(self) -> str:
        return table_name(self.guarantee)

    def _last_batch(self, conn) -> int | None:
        row = conn.execute(
            "SELECT batch_id FROM sink_progress WHERE sink = %s AND job = %s FOR UPDATE",
            (self.guarantee, self.fence.job),
        ).fetchone()
        return None if row is None else int(row[0])

    def _record_progress(self, conn, batch_id: int) -> None:
        conn.execute(
            "INSERT INTO sink_progress (sink, job, batch_id, epoch) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (sink, job) DO UPDATE SET batch_id = EXCLUDED.batch_id, epoch = EXCLUDED.epoch, "
            "committed_at = now()",
            (self.guarantee, self.fence.job, batch_id, self.fence.epoch),
        )

    def _apply(self, conn, batch_id: int, rows: list[Increment]) -> None:
        if rows:
            conn.execute(
                "CREATE TEMP TABLE IF NOT EXISTS increments "
                "(campaign_id TEXT, event_type TEXT, window_start TIMESTAMPTZ, events BIGINT, revenue NUMERIC(18,2)) "
                "ON COMMIT DELETE ROWS"
            )
            with conn.cursor().copy(
                "COPY increments (campaign_id, event_type, window_start, events, revenue) FROM STDIN"
            ) as copy:
                for row in rows:
                    copy.write_row(row)
            conn.execute(
                f"INSERT INTO {self.table} SELECT * FROM increments "
                "ON CONFLICT (campaign_id, event_type, window_start) "
                f"DO UPDATE SET events = {self.table}.events + EXCLUDED.events, "
                f"revenue = {self.table}.revenue + EXCLUDED.revenue"
            )
        conn.execute(
            "INSERT INTO sink_commits (sink, job, batch_id, epoch, rows) VALUES (%s, %s, %s, %s, %s)",
            (self.guarantee, self.fence.job, batch_id, self.fence.epoch, len(rows)),
        )

    def deliver(self, batch_id: int, increments: Iterable[Increment]) -> str:
        rows = list(increments)
        with connect(self.dsn) as conn:
            if self.guarantee == "exactly-once":
                with conn.transaction():
                    assert_epoch_in(conn, self.fence.job, self.fence.epoch)
                    last = self._last_batch(conn)
                    if last is not None and batch_id <= last:
                        return "skipped: already committed"
                    self._apply(conn, batch_id, rows)
                    self._record_progress(conn, batch_id)
                    faults.point("sink.exactly-once.before_commit")
                faults.point("sink.exactly-once.after_commit")
            elif self.guarantee == "at-least-once":
                with conn.transaction():
                    assert_epoch_in(conn, self.fence.job, self.fence.epoch)
                    self._apply(conn, batch_id, rows)
                faults.point("sink.at-least-once.after_commit")
            else:
                with conn.transaction():
                    assert_epoch_in(conn, self.fence.job, self.fence.epoch)
                    last = self._last_batch(conn)
                    if last is not None and batch_id <= last:
                        return "skipped: progress says delivered"
                    self._record_progress(conn, batch_id)
                faults.point("sink.at-most-once.between")
                with conn.transaction():
                    assert_epoch_in(conn, self.fence.job, self.fence.epoch)
                    self._apply(conn, batch_id, rows)
        return f"committed {len(rows)} increments"


def read_metrics(dsn: str, guarantee: str) -> list[tuple]:
    with connect(dsn) as conn:
        return conn.execute(
            f"SELECT campaign_id, event_type, window_start, events, revenue FROM {table_name(guarantee)}"
        ).fetchall()
