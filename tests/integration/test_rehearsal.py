"""A standby's rehearsal (streaming/standby.py `rehearse`) runs the query's own plan, the
sessions' owners included, and leaves nothing behind: no scratch checkpoint or files, nothing
written into user_sessions, and no state store still open whose maintenance would write into the
removed checkpoint.

Integration: a real Kafka broker and the test's local Spark session."""

from pathlib import Path

import pytest

from eo.core.tables import USER_SESSIONS
from eo.runtime.environment import environment
from streaming.standby import rehearse
from streaming.takeover import prepare
from tests.integration.producing import produce

pytestmark = pytest.mark.integration


def test_a_rehearsal_closes_its_state_stores_and_removes_its_folders(spark, pipeline):
    prepare(spark, pipeline)
    produce(pipeline, 2_000)
    sessions = environment(pipeline).table(USER_SESSIONS.name).refresh()
    before = (sessions.version(), sorted(sessions.file_uris()))
    records, files, merged = rehearse(spark, pipeline)
    # It read records and its tasks wrote files: the two states were opened, and their maintenance started.
    assert records > 0 and files > merged > 0, "the rehearsal ran nothing, or its owners merged nothing"
    sessions.update_incremental()
    assert (sessions.version(), sorted(sessions.file_uris())) == before, "the rehearsal changed user_sessions"
    assert not any(Path(pipeline.table_path(USER_SESSIONS.name)).rglob("*.parquet")), "files left in user_sessions"
    stores = spark._jvm.org.apache.spark.sql.execution.streaming.state.StateStore
    assert not stores.isMaintenanceRunning(), "the rehearsal's state stores are still open"
    assert not Path(pipeline.checkpoint_path("events-rehearsal")).exists()
    assert not Path(pipeline.lake_root, "_stream", "events-rehearsal").exists()
