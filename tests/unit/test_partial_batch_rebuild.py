"""A crash can leave a micro-batch committed to some live tables and not others. A rebuild into
the live tables then rebuilds all of them from bronze, and must leave every one at the position
bronze reached: the stream's replay of the batch may then neither count it again in a table that
lacked it (the rebuild counted it) nor lose it from one (the rebuild did not see it)."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from batch.rebuild import rebuild
from eo.core.intervals import Interval
from eo.core.tables import BRONZE, GOLD, QUARANTINE, SILVER, SOURCE_KEY, USER_SESSIONS
from eo.runtime import lake
from eo.runtime.cli import NotReady
from eo.runtime.environment import environment
from eo.runtime.live_tables import STREAM_TABLES, app_id_of, claim_while_stopped, generation
from producer.generator import ClickstreamGenerator, Rates
from streaming.microbatch import MicroBatch
from tests.conftest import lake_settings
from tests.helpers import BASE, micro_batch, prepare_lake, records, resume, sorted_rows, stream

pytestmark = pytest.mark.unit


class Crash(RuntimeError):
    """A crash of the driver at one table's commit of one batch (the others commit)."""


def crashing(settings, table: str, at_batch: int) -> MicroBatch:
    """The stream's foreachBatch, failing batch `at_batch`'s commit of `table` before it is made."""
    batch = micro_batch(settings, live=True, log_progress=False)
    appender, accumulate, merge_sessions = batch.appender, batch.accumulate, batch.merge_sessions

    def due(txn) -> bool:
        return txn.position == at_batch + 1

    def append(name, written, txn):
        run = appender(name, written, txn)

        def crash_or_run():
            if name == table and due(txn):
                raise Crash(f"{name} at batch {at_batch}")
            return run()

        return crash_or_run

    def sums(declared, rows, txn):  # every additive gold table's commit
        if table == declared.name and due(txn):
            raise Crash(f"{table} at batch {at_batch}")
        return accumulate(declared, rows, txn)

    def sessions(written, read_at, txn, after=lambda: None):
        if table == USER_SESSIONS.name and due(txn):
            raise Crash(f"{table} at batch {at_batch}")
        return merge_sessions(written, read_at, txn, after)

    batch.appender, batch.accumulate, batch.merge_sessions = append, sums, sessions
    return batch


def positions(settings) -> dict[str, int]:
    app_id = app_id_of(generation(settings))
    found = {}
    for table in STREAM_TABLES:
        target = environment(settings).table(table.name)
        target.refresh()
        reached = target.reached(app_id)
        found[table.name] = reached[1] if reached else 0
    return found


def batches(seed: int, count: int) -> list[list[tuple]]:
    generator = ClickstreamGenerator(
        seed=seed, start=BASE, span_hours=6, total_events=120 * count, users=12,
        rates=Rates(duplicate=0.05, malformed=0.03),
    )  # fmt: skip
    rows = records(m.value for m in generator.messages())
    size = -(-len(rows) // count)
    return [rows[at : at + size] for at in range(0, len(rows), size)]


def counted_once(spark, settings) -> None:
    """Every event counted once in each table that adds them up (a doubled batch shows here)."""
    silver = lake.read(spark, settings, SILVER)
    events = silver.count()
    assert silver.select("event_id").distinct().count() == events
    for table in (t for t in GOLD if "events" in t.columns):
        assert lake.read(spark, settings, table).agg(F.sum("events")).first()[0] == events, table.name
    quarantine = lake.read(spark, settings, QUARANTINE)
    assert quarantine.select(*SOURCE_KEY).distinct().count() == quarantine.count()


@pytest.mark.slow  # about two minutes: five crashes, rebuilds and replays
def test_a_rebuild_after_a_partial_batch_leaves_every_table_at_bronzes_position(spark, tmp_path):
    """Each live table left behind in turn by a crash, then `rebuild --target main`, then the
    stream's restart: nothing is counted twice or lost."""
    settings = lake_settings(tmp_path)
    prepare_lake(spark, settings)
    left_behind = [t.name for t in STREAM_TABLES]
    first, *crashed, last = batches(seed=11, count=len(left_behind) + 2)
    stream(spark, settings, [first], batch=micro_batch(settings, live=True, log_progress=False))
    for at, (table, rows) in enumerate(zip(left_behind, crashed, strict=True), start=1):
        with pytest.raises(Exception, match="Crash"):
            stream(spark, settings, [rows], batch=crashing(settings, table, at_batch=at))
        reached = positions(settings)
        assert reached[table] == at and max(reached.values()) == at + 1, reached  # a partial batch

        rebuild(spark, settings, target="main", fence=claim_while_stopped(settings, "rebuilding --target main"))
        after = positions(settings)
        assert set(after.values()) == {reached[BRONZE.name]}, (table, after)  # bronze's, on every table

        resume(spark, settings, micro_batch(settings, live=True, log_progress=False))  # the batch replayed
        counted_once(spark, settings)
    stream(spark, settings, [last], batch=micro_batch(settings, live=True, log_progress=False))
    rebuild(spark, settings)
    for table in (QUARANTINE, SILVER, *GOLD):
        assert sorted_rows(spark, settings, table) == sorted_rows(spark, settings, table, "rebuild"), table.name


@pytest.mark.slow  # two stream runs, a crash between them and a refused rebuild
def test_an_interval_rebuild_into_main_is_refused_while_a_batch_is_partial(spark, tmp_path):
    settings = lake_settings(tmp_path)
    prepare_lake(spark, settings)
    first, second = batches(seed=12, count=2)
    stream(spark, settings, [first], batch=micro_batch(settings, live=True, log_progress=False))
    with pytest.raises(Exception, match="Crash"):
        stream(spark, settings, [second], batch=crashing(settings, USER_SESSIONS.name, at_batch=1))
    fence = claim_while_stopped(settings, "rebuilding --target main")
    day = Interval(BASE, BASE.replace(hour=6))
    with pytest.raises(NotReady, match=r"batch 1 partial: committed to bronze.*not to user_sessions \(at batch 0\)"):
        rebuild(spark, settings, day, target="main", fence=fence)
