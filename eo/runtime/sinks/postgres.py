"""The per-minute metrics delivered into PostgreSQL, exactly once.

Each micro-batch delivers *increments*: the events and revenue its newly accepted events add
to each (campaign, type, minute). Increments are not idempotent, so the guarantee is visible:
the increments, the progress row (job, batch id, epoch) and the epoch check share one
transaction; a replayed batch finds its progress row and is skipped (the seeds' "transactional
updates" architecture, for an external database). A superseded epoch never commits.

The fault lab adds sinks with weaker guarantees beside this one (lab/weak_sinks.py), to show
what they lose or repeat.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from eo.runtime.fencing import Fence, assert_epoch_in
from eo.runtime.hooks import hooks

GUARANTEE = "exactly-once"
Increment = tuple[str, str, object, int, object]  # campaign_id, event_type, window_start, events, revenue


def table_name(guarantee: str) -> str:
    return "metrics_" + guarantee.replace("-", "_")


def metrics_ddl(guarantee: str) -> str:
    return f"""CREATE TABLE IF NOT EXISTS {table_name(guarantee)} (
        campaign_id TEXT NOT NULL, event_type TEXT NOT NULL, window_start TIMESTAMPTZ NOT NULL,
        events BIGINT NOT NULL, revenue NUMERIC(18,2) NOT NULL,
        PRIMARY KEY (campaign_id, event_type, window_start))"""


DDL = [
    metrics_ddl(GUARANTEE),
    """CREATE TABLE IF NOT EXISTS sink_progress (
        sink TEXT NOT NULL, job TEXT NOT NULL, batch_id BIGINT NOT NULL, epoch BIGINT NOT NULL,
        committed_at TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (sink, job))""",
    # Every commit, with the epoch that made it: the evidence that no zombie wrote.
    """CREATE TABLE IF NOT EXISTS sink_commits (
        sink TEXT NOT NULL, job TEXT NOT NULL, batch_id BIGINT NOT NULL, epoch BIGINT NOT NULL,
        rows INTEGER NOT NULL, committed_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp())""",
]


def connect(dsn: str):
    import psycopg

    # Timestamps travel as UTC wall-clock values, as Spark's session time zone has them.
    return psycopg.connect(dsn, autocommit=False, options="-c timezone=UTC")


def create_tables(dsn: str) -> None:
    with connect(dsn) as conn:
        for statement in DDL:
            conn.execute(statement)


def reset(dsn: str, job: str) -> None:
    """Forget everything delivered (a reset starts the sinks afresh): the metrics of every sink that
    committed here (the lab's weaker ones too), and the job's progress."""
    with connect(dsn) as conn:
        sinks = {GUARANTEE, *(row[0] for row in conn.execute("SELECT DISTINCT sink FROM sink_commits").fetchall())}
        for sink in sorted(sinks):
            conn.execute(f"TRUNCATE {table_name(sink)}")
        conn.execute("DELETE FROM sink_progress WHERE job = %s", (job,))


@dataclass
class PostgresSink:
    dsn: str
    fence: Fence
    guarantee = GUARANTEE

    @property
    def table(self) -> str:
        return table_name(self.guarantee)

    def _last_batch(self, conn) -> int | None:
        row = conn.execute(
            "SELECT batch_id FROM sink_progress WHERE sink = %s AND job = %s FOR UPDATE",
            (self.guarantee, self.fence.job),
        ).fetchone()
        return None if row is None else int(row[0])

    def _delivered(self, conn, batch_id: int) -> bool:
        """Inside a transaction: refuse a superseded epoch, and say whether the batch's progress is recorded."""
        assert_epoch_in(conn, self.fence.job, self.fence.epoch)
        last = self._last_batch(conn)
        return last is not None and batch_id <= last

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
            with conn.transaction():
                if self._delivered(conn, batch_id):
                    return "skipped: already committed"
                self._apply(conn, batch_id, rows)
                self._record_progress(conn, batch_id)
                hooks().point("sink.exactly-once.before_commit")
            hooks().point("sink.exactly-once.after_commit")
        return f"committed {len(rows)} increments"


def read_metrics(dsn: str, guarantee: str) -> list[tuple]:
    with connect(dsn) as conn:
        return conn.execute(
            f"SELECT campaign_id, event_type, window_start, events, revenue FROM {table_name(guarantee)}"
        ).fetchall()
