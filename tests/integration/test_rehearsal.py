"""A standby's rehearsal (streaming/standby.py `rehearse`) runs the query's own plan, the
sessions' owners included, and leaves nothing behind: no scratch checkpoint or files, nothing
written into user_sessions, and no state store still open whose maintenance would write into the
removed checkpoint.

Integration: a real Kafka broker and the test's local Spark session."""

from pathlib import Path

import pytest

from eo.core.tables import USER_SESSIONS
from eo.runtime.environment import environment
from streaming.query import Knobs
from streaming.run import run
from streaming.standby import rehearse
from tests.integration.producing import produce

pytestmark = pytest.mark.integration


def test_a_rehearsal_reads_the_stored_sessions_and_leaves_nothing_behind(spark, pipeline):
    produce(pipeline, 2_000)
    assert run(pipeline, Knobs(until_caught_up=True)) == 0  # the active instance stored their sessions
    sessions = environment(pipeline).table(USER_SESSIONS.name).refresh()

    def on_disk() -> list[Path]:
        return sorted(Path(pipeline.table_path(USER_SESSIONS.name)).rglob("*.parquet"))

    before = (sessions.version(), sorted(sessions.file_uris()), on_disk())
    rehearsed = rehearse(spark, pipeline)
    # It read records and its tasks wrote files: the state was opened, and its maintenance started.
    assert rehearsed.records > 0 and rehearsed.files > rehearsed.merged > 0, rehearsed
    # Its last batch ran again from the scratch checkpoint, alone: not the records read before it.
    assert 0 < rehearsed.replayed < rehearsed.records, rehearsed
    # The newest records are the ones the active instance committed: their owners found the stored
    # sessions and merged them, as a batch that replays them would. The active instance's owners
    # laid their files out by owner: the rehearsal's owners rewrote their own (into the scratch).
    assert rehearsed.rewritten > 0 and rehearsed.replaced == 0, rehearsed
    sessions.update_incremental()
    assert (sessions.version(), sorted(sessions.file_uris()), on_disk()) == before, "user_sessions changed"
    stores = spark._jvm.org.apache.spark.sql.execution.streaming.state.StateStore
    assert not stores.isMaintenanceRunning(), "the rehearsal's state stores are still open"
    assert not Path(pipeline.checkpoint_path("events-rehearsal")).exists()
    assert not Path(pipeline.lake_root, "_stream", "events-rehearsal").exists()
