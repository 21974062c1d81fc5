"""Records gone from Kafka after the stream's checkpoint: the refusal names exactly the ranges,
`accept` records those, and the stream reads past them with Spark's data-loss check off only
until its committed offsets are past them; the rest of the run reads with it on."""

from __future__ import annotations

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from eo.core.source_gaps import Gap
from eo.runtime import source_gaps
from eo.runtime.cli import NotReady
from ops.source_gaps import main as source_gaps_cli
from streaming import query as stream_query
from streaming.query import Knobs
from streaming.run import run
from tests.conftest import settings_env
from tests.integration.producing import produce

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # about three minutes


def delete_records(settings, partition: int, before: int) -> None:
    """What Kafka's retention does: the partition's records before `before` go."""
    admin = AdminClient({"bootstrap.servers": settings.kafka_bootstrap})
    for future in admin.delete_records([TopicPartition(settings.topic, partition, before)]).values():
        future.result()


def test_a_gap_after_the_checkpoint_is_read_past_with_sparks_check_off_only_until_past_it(pipeline, monkeypatch):
    produce(pipeline, 400, seed=3)
    assert run(pipeline, Knobs(until_caught_up=True)) == 0
    position = source_gaps.next_offsets(pipeline)[0]
    produce(pipeline, 1200, seed=4, label="more")
    delete_records(pipeline, 0, position + 50)  # retention took 50 records the stream had not read

    with pytest.raises(NotReady) as refused:
        run(pipeline, Knobs(until_caught_up=True))
    assert f"--ranges 0:{position}-{position + 50}`" in str(refused.value)

    for name, value in settings_env(pipeline).items():
        monkeypatch.setenv(name, value)
    assert source_gaps_cli(["accept", "--by", "tester", "--reason", "retention ran early"]) == 0  # the refusal's
    assert source_gaps.accepted(pipeline) == [Gap(pipeline.topic, 0, position, position + 50)]

    checks: list[bool] = []
    reading = stream_query.kafka_records

    def recorded(spark, settings, source):
        checks.append(source.fail_on_data_loss)
        return reading(spark, settings, source)

    monkeypatch.setattr(stream_query, "kafka_records", recorded)
    assert run(pipeline, Knobs(until_caught_up=True, max_offsets_per_trigger=200)) == 0
    assert checks[0] is False and checks[1:] and all(checks[1:]), checks  # off only while crossing the gap
    assert source_gaps.next_offsets(pipeline)[0] > position + 50
