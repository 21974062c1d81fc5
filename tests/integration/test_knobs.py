"""Execution knobs do not change results: the same topic streamed with tiny micro-batches on
availableNow, and with unlimited ones on a processing-time trigger, gives identical tables."""

import pytest

from eo.core.tables import CAMPAIGN_MINUTE_METRICS, QUARANTINE, SILVER, USER_SESSIONS
from eo.runtime.kafka_admin import topic_partitions
from producer.generator import Rates
from streaming.plan import Source
from streaming.query import Knobs, bootstrap_offsets, start_query
from streaming.run import run
from streaming.takeover import prepare
from tests.helpers import micro_batch, sorted_rows
from tests.integration.producing import produce

pytestmark = pytest.mark.integration


def stream_continuously(spark, settings, trigger_seconds: float) -> None:
    """Processing-time trigger, no size limit; stopped once everything available is done."""
    prepare(spark, settings)
    source = Source(starting_offsets=bootstrap_offsets(spark, settings, topic_partitions(settings)))
    query = start_query(spark, settings, Knobs(trigger_seconds=trigger_seconds), micro_batch(settings), source)
    try:
        query.processAllAvailable()
    finally:
        query.stop()


def test_batch_size_and_trigger_do_not_change_any_row(spark, pipeline):
    produce(pipeline, 10_000, rates=Rates(late=0.05, very_late=0.02, duplicate=0.05))
    small = pipeline.with_overrides(
        lake_root=pipeline.lake_root + "-small", checkpoint_root=pipeline.checkpoint_root + "-small"
    )
    assert run(small, Knobs(until_caught_up=True, max_offsets_per_trigger=700)) == 0
    stream_continuously(spark, pipeline, trigger_seconds=0.5)
    for table in (CAMPAIGN_MINUTE_METRICS, USER_SESSIONS, SILVER, QUARANTINE):
        big_rows = sorted_rows(spark, pipeline, table)
        assert big_rows, table.name
        assert sorted_rows(spark, small, table) == big_rows, f"{table.name} depends on the knobs"
