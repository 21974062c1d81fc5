"""The append tables' files are written by the micro-batch's tasks and committed by the driver
(streaming/task_writes.py): a crash after the files are written, or after some tables are
committed and not others, leaves each record once in every table, and stream == rebuild.

A crashed and replayed lake is compared with the same records streamed without a crash, whose
tables equal their rebuild (`crash_free`, once a module): one rebuild for every crash of the same
records, where each crash had its own (docs/testing.md, replacements)."""

from pathlib import Path

import pytest
from deltalake import DeltaTable

from batch.rebuild import rebuild
from eo.core.tables import BRONZE, CAMPAIGN_MINUTE_METRICS, QUARANTINE, SILVER, USER_SESSIONS
from eo.runtime.hooks import Hooks, install
from tests.conftest import lake_settings
from tests.helpers import BASE, CrashOnce, event, micro_batch, prepare_lake, records, sorted_rows, stream

pytestmark = [pytest.mark.unit, pytest.mark.slow]

PAYLOADS = [
    event("a", 0, user="u1"),
    event("b", 1, user="u2", kind="purchase", price="2.50"),
    event("a", 0, user="u1"),  # a copy
    "{broken",
]


FIRST_USERS = [event("a", 0, user="u1")]
SECOND_USERS = [event("b", 0.5, user="u1"), event("c", 0.2, user="u2")]
COMPARED = (CAMPAIGN_MINUTE_METRICS, USER_SESSIONS, SILVER, QUARANTINE)


@pytest.fixture(scope="module")
def crash_free(spark, tmp_path_factory):
    """What each crash test's records give streamed without a crash, batch by batch, each table
    equal to its rebuild: table name -> sorted rows, by the name of the records."""
    found = {}
    for name, batches in (("payloads", [PAYLOADS]), ("users", [FIRST_USERS, SECOND_USERS])):
        settings = lake_settings(tmp_path_factory.mktemp(f"crash-free-{name}"))
        prepare_lake(spark, settings)
        batch = micro_batch(settings, log_progress=False)
        for payloads in batches:
            stream(spark, settings, [records(payloads)], batch)
        rebuild(spark, settings)
        found[name] = {t.name: sorted_rows(spark, settings, t) for t in COMPARED}
        for table in COMPARED:
            assert found[name][table.name] == sorted_rows(spark, settings, table, "rebuild"), (name, table.name)
    return found


def files_on_disk(settings, table) -> set[str]:
    return {p.name for p in Path(settings.table_path(table.name)).rglob("*.parquet")}


@pytest.mark.parametrize(
    "where",
    [
        "events.after_files_written",
        "events.after_bronze_commit",
        "events.after_campaign_minute_metrics_commit",
        "events.after_sessions_rewritten",
        "events.after_user_sessions_commit",
    ],
)
def test_a_crash_between_the_files_and_the_commits_leaves_each_record_once(spark, lake, where, crash_free):
    prepare_lake(spark, lake)
    batch = micro_batch(lake, log_progress=False)
    previous = install(CrashOnce(where))
    written = (BRONZE, QUARANTINE, SILVER, USER_SESSIONS)
    try:
        with pytest.raises(Exception, match="crash at"):
            stream(spark, lake, [records(PAYLOADS)], batch)
        before = {t.name: files_on_disk(lake, t) for t in written}
        stream(spark, lake, [[]], micro_batch(lake, log_progress=False))  # a restart replays the batch
    finally:
        install(previous)
    assert len(sorted_rows(spark, lake, BRONZE)) == len(PAYLOADS)
    assert [r.event_id for r in sorted_rows(spark, lake, SILVER)] == ["a", "b"]
    assert len(sorted_rows(spark, lake, QUARANTINE)) == 1
    committed = {Path(uri).name for uri in DeltaTable(lake.table_path(BRONZE.name)).file_uris()}
    if where == "events.after_files_written":  # the first attempt's files: no commit names them, never read
        assert files_on_disk(lake, BRONZE) - committed
    # The replay writes no file for a table the batch was committed to before the kill.
    appends = [BRONZE.name, QUARANTINE.name, SILVER.name]  # their commits end together
    surely_committed = {
        "events.after_files_written": [],
        "events.after_bronze_commit": appends,
        "events.after_campaign_minute_metrics_commit": appends,
        "events.after_sessions_rewritten": appends,
        "events.after_user_sessions_commit": [*appends, USER_SESSIONS.name],
    }[where]
    replayed = {t.name: files_on_disk(lake, t) - before[t.name] for t in written}
    assert {name: replayed[name] for name in surely_committed} == {name: set() for name in surely_committed}
    if where == "events.after_files_written":
        assert all(replayed[name] for name in (BRONZE.name, SILVER.name, USER_SESSIONS.name))  # all again
    for table in COMPARED:
        assert sorted_rows(spark, lake, table) == crash_free["payloads"][table.name], table.name


@pytest.mark.parametrize(
    "where",
    ["events.after_files_written", "events.after_campaign_minute_metrics_commit", "events.after_user_sessions_commit"],
)
def test_a_crash_between_golds_commits_counts_each_user_once(spark, lake, where, crash_free):
    """The second batch brings u1 again in the minute its stored session already counts it in, and
    u2 for the first time. Killed between gold's commits and replayed, the batch's distinct users
    are those it counted against the sessions it first read: u2 only."""
    prepare_lake(spark, lake)
    batch = micro_batch(lake, log_progress=False)
    stream(spark, lake, [records(FIRST_USERS)], batch)
    previous = install(CrashOnce(where))
    try:
        with pytest.raises(Exception, match="crash at"):
            stream(spark, lake, [records(SECOND_USERS)], batch)
        stream(spark, lake, [[]], batch)
    finally:
        install(previous)
    assert [(m.events, m.distinct_users) for m in sorted_rows(spark, lake, CAMPAIGN_MINUTE_METRICS)] == [(3, 2)]
    sessions = [(s.user_id, s.events, list(s.metric_keys)) for s in sorted_rows(spark, lake, USER_SESSIONS)]
    minute = "c001|impression|" + BASE.strftime("%Y-%m-%dT%H:%M")
    assert sessions == [("u1", 2, [minute]), ("u2", 1, [minute])]
    for table in COMPARED:
        assert sorted_rows(spark, lake, table) == crash_free["users"][table.name], table.name


def test_a_crash_after_sessions_files_were_rewritten_leaves_each_session_once(spark, lake):
    """The second batch extends a stored session: its owner writes its own file again without it
    (the first batch's owners laid their files out by owner), then the driver dies before the
    commit. The replay merges again; the rewritten file is never read."""
    prepare_lake(spark, lake)
    batch = micro_batch(lake, log_progress=False)
    stream(spark, lake, [records([event("a", 0, user="u1"), event("b", 0, user="u2")])], batch)
    previous = install(CrashOnce("events.after_sessions_rewritten"))
    try:
        with pytest.raises(Exception, match="crash at"):
            stream(spark, lake, [records([event("c", 10, user="u1")])], batch)
        stream(spark, lake, [[]], batch)
    finally:
        install(previous)
    sessions = [(s.user_id, s.events) for s in sorted_rows(spark, lake, USER_SESSIONS)]
    assert sessions == [("u1", 2), ("u2", 1)]
    assert batch.rewrites.files_rewritten_by_tasks >= 1  # the file that held u1's session, written again
    committed = {Path(uri).name for uri in DeltaTable(lake.table_path(USER_SESSIONS.name)).file_uris()}
    orphans = files_on_disk(lake, USER_SESSIONS) - committed  # the dead attempt's files, never read
    assert any("-s0" in name for name in orphans)  # among them, what an owner wrote again
    rebuild(spark, lake)
    assert sorted_rows(spark, lake, USER_SESSIONS) == sorted_rows(spark, lake, USER_SESSIONS, "rebuild")


class DropLastSession(Hooks):
    """Once the tasks have read user_sessions, another commit changes it, once: the latest session
    of the table goes. The batch must be merged against the table as it commits, not as the tasks
    read it."""

    def __init__(self, path: str) -> None:
        self.path, self.fired = path, False

    def point(self, name: str) -> None:
        if name != "events.after_files_written" or self.fired:
            return
        self.fired = True
        from deltalake import write_deltalake

        rows = DeltaTable(self.path).to_pyarrow_table().sort_by([("session_start", "descending")])
        write_deltalake(self.path, rows.slice(1), mode="overwrite", partition_by=list(USER_SESSIONS.partition_by))


def test_sessions_that_moved_during_the_batch_are_merged_again(spark, lake, capsys):
    prepare_lake(spark, lake)
    stream(spark, lake, [records([event("a", 0, user="u1"), event("b", 40, user="u1")])])
    assert len(sorted_rows(spark, lake, USER_SESSIONS)) == 2  # 40 minutes apart: two sessions
    previous = install(DropLastSession(lake.table_path(USER_SESSIONS.name)))
    try:  # c would join both; the session of b is gone by the time the driver commits
        stream(spark, lake, [records([event("c", 20, user="u1")])])
    finally:
        install(previous)
    assert "user_sessions moved during the batch (version 1 -> 2: WRITE@2)" in capsys.readouterr().out
    (session,) = sorted_rows(spark, lake, USER_SESSIONS)
    # Merged with what the tasks read (a and b), it would hold 3 events and end at minute 40.
    assert session.events == 2
    assert (session.session_end - session.session_start).total_seconds() == 20 * 60
