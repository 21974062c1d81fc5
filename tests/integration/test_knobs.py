"""Execution knobs do not change results: the same topic streamed with tiny micro-batches on
availableNow, and with unlimited ones on a processing-time trigger, gives identical tables."""

import pytest

from jobs.kafka_admin import topic_partitions
from jobs.tables import CAMPAIGN_MINUTE_METRICS, QUARANTINE, SILVER, USER_SESSIONS
from producer.generator import Rates
from streaming.queries import Knobs, start_ingest, start_refine
from streaming.run import prepare, run
from tests.helpers import sorted_rows
from tests.integration.producing import produce

pytestmark = pytest.mark.integration


def stream_continuously(spark, settings, trigger_seconds: float) -> None:
    """Processing-time trigger, no size limits; stopped once everything available is done."""
    prepare(spark, settings)
    knobs = Knobs(trigger_seconds=trigger_seconds)
    ingest = start_ingest(spark, settings, knobs, topic_partitions(settings))
    refine = start_refine(spark, settings, knobs)
    try:
        ingest.processAllAvailable()
        refine.processAllAvailable()
    finally:
        ingest.stop()
        refine.stop()


def test_batch_size_and_trigger_do_not_change_any_row(spark, pipeline):
    produce(pipeline, 10_000, rates=Rates(late=0.05, very_late=0.02, duplicate=0.05))
    small = pipeline.with_overrides(
        lake_root=pipeline.lake_root + "-small", checkpoint_root=pipeline.checkpoint_root + "-small"
    )
    run(small, Knobs(until_caught_up=True, max_offsets_per_trigger=2500, max_files_per_trigger=2), ["ingest", "refine"])
    stream_continuously(spark, pipeline, trigger_seconds=0.5)
    for table in (CAMPAIGN_MINUTE_METRICS, USER_SESSIONS, SILVER, QUARANTINE):
        big_rows = sorted_rows(spark, pipeline, table)
        assert big_rows, table.name
        assert sorted_rows(spark, small, table) == big_rows, f"{table.name} depends on the knobs"
