"""A standby's rehearsal (streaming/standby.py `rehearse`) runs the query's own plan and leaves
nothing behind: no scratch checkpoint or files, and no state store still open whose maintenance
would write into the removed checkpoint.

Integration: a real Kafka broker and the test's local Spark session."""

from pathlib import Path

import pytest

from streaming.standby import rehearse
from streaming.takeover import prepare
from tests.integration.producing import produce

pytestmark = pytest.mark.integration


def test_a_rehearsal_closes_its_state_stores_and_removes_its_folders(spark, pipeline):
    prepare(spark, pipeline)
    produce(pipeline, 2_000)
    records, files = rehearse(spark, pipeline)
    # It read records and its tasks wrote files: the two states were opened, and their maintenance started.
    assert records > 0 and files > 0, "the rehearsal ran nothing"
    stores = spark._jvm.org.apache.spark.sql.execution.streaming.state.StateStore
    assert not stores.isMaintenanceRunning(), "the rehearsal's state stores are still open"
    assert not Path(pipeline.checkpoint_path("events-rehearsal")).exists()
    assert not Path(pipeline.lake_root, "_stream", "events-rehearsal").exists()
