"""The PostgreSQL sink's transaction boundaries, guarantee by guarantee, on a real server.

A crash is simulated by an exception at the fault point (the lab uses SIGKILL at the same
points); what is committed at that moment decides what a replay does.
"""

import datetime as dt
from decimal import Decimal

import pytest

from eo.runtime import hooks
from eo.runtime.fencing import Fence, Fenced, PostgresLease
from eo.runtime.hooks import Hooks
from eo.runtime.sinks import postgres
from eo.runtime.sinks.postgres import PostgresSink, read_metrics
from lab import weak_sinks

pytestmark = pytest.mark.integration  # a real PostgreSQL server (the pg_dsn fixture)

MINUTE = dt.datetime(2026, 11, 20, 10, 0)
BATCH = [("c001", "purchase", MINUTE, 2, Decimal("10.50")), ("c002", "click", MINUTE, 1, Decimal("0.00"))]


class Crash(Exception):
    pass


@pytest.fixture
def sink_for(pg_dsn):
    postgres.create_tables(pg_dsn)
    weak_sinks.create_tables(pg_dsn)
    lease = PostgresLease(pg_dsn)
    fence = Fence.start(lease, "events")
    kinds = {"exactly-once": PostgresSink, **weak_sinks.SINKS}
    return lambda guarantee, f=fence: kinds[guarantee](pg_dsn, f)


def crash_at(monkeypatch, name: str) -> None:
    class CrashAt(Hooks):
        def point(self, at: str) -> None:
            if at == name:
                raise Crash(at)

    monkeypatch.setattr(hooks, "_installed", CrashAt())


def totals(dsn: str, guarantee: str) -> dict:
    return {(c, t): (e, r) for c, t, _, e, r in read_metrics(dsn, guarantee)}


def test_exactly_once_skips_a_batch_it_already_committed(sink_for, pg_dsn):
    sink = sink_for("exactly-once")
    assert sink.deliver(0, BATCH).startswith("committed")
    assert sink.deliver(0, BATCH) == "skipped: already committed"
    sink.deliver(1, BATCH[:1])
    assert totals(pg_dsn, "exactly-once") == {("c001", "purchase"): (4, Decimal("21.00")), ("c002", "click"): (1, 0)}


def test_exactly_once_crash_before_commit_leaves_nothing_and_the_replay_applies_once(sink_for, pg_dsn, monkeypatch):
    sink = sink_for("exactly-once")
    crash_at(monkeypatch, "sink.exactly-once.before_commit")
    with pytest.raises(Crash):
        sink.deliver(0, BATCH)
    assert totals(pg_dsn, "exactly-once") == {}
    monkeypatch.setattr(hooks, "_installed", Hooks())
    sink.deliver(0, BATCH)
    assert totals(pg_dsn, "exactly-once")[("c001", "purchase")] == (2, Decimal("10.50"))


def test_exactly_once_crash_after_commit_is_not_applied_twice(sink_for, pg_dsn, monkeypatch):
    sink = sink_for("exactly-once")
    crash_at(monkeypatch, "sink.exactly-once.after_commit")
    with pytest.raises(Crash):
        sink.deliver(0, BATCH)
    monkeypatch.setattr(hooks, "_installed", Hooks())
    assert sink.deliver(0, BATCH) == "skipped: already committed"
    assert totals(pg_dsn, "exactly-once")[("c001", "purchase")] == (2, Decimal("10.50"))


def test_at_least_once_repeats_a_replayed_batch(sink_for, pg_dsn, monkeypatch):
    sink = sink_for("at-least-once")
    crash_at(monkeypatch, "sink.at-least-once.after_commit")
    with pytest.raises(Crash):
        sink.deliver(0, BATCH)
    monkeypatch.setattr(hooks, "_installed", Hooks())
    sink.deliver(0, BATCH)
    assert totals(pg_dsn, "at-least-once")[("c001", "purchase")] == (4, Decimal("21.00"))


def test_at_most_once_loses_a_batch_crashed_between_progress_and_rows(sink_for, pg_dsn, monkeypatch):
    sink = sink_for("at-most-once")
    crash_at(monkeypatch, "sink.at-most-once.between")
    with pytest.raises(Crash):
        sink.deliver(0, BATCH)
    monkeypatch.setattr(hooks, "_installed", Hooks())
    assert sink.deliver(0, BATCH) == "skipped: progress says delivered"
    assert totals(pg_dsn, "at-most-once") == {}


@pytest.mark.parametrize("guarantee", weak_sinks.GUARANTEES)
def test_a_zombie_never_writes_a_row(sink_for, pg_dsn, guarantee):
    zombie = sink_for(guarantee)
    Fence.start(PostgresLease(pg_dsn), "events")  # a newer instance takes over
    with pytest.raises(Fenced):
        zombie.deliver(7, BATCH)
    assert totals(pg_dsn, guarantee) == {}
    with postgres.connect(pg_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM sink_commits").fetchone()[0] == 0


def test_a_reset_empties_the_sinks_that_delivered_and_nothing_else(sink_for, pg_dsn):
    for guarantee in weak_sinks.GUARANTEES:
        sink_for(guarantee).deliver(0, BATCH)
    with postgres.connect(pg_dsn) as conn:  # a table of someone else's that looks like a sink's
        conn.execute("CREATE TABLE IF NOT EXISTS metrics_of_another_team (n INT)")
        conn.execute("INSERT INTO metrics_of_another_team VALUES (1)")
    postgres.reset(pg_dsn, "events")
    assert all(totals(pg_dsn, g) == {} for g in weak_sinks.GUARANTEES)
    with postgres.connect(pg_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM metrics_of_another_team").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM sink_progress WHERE job = 'events'").fetchone()[0] == 0
        conn.execute("DROP TABLE metrics_of_another_team")
