"""Faults an operator meets that are not crashes, on the real job, broker and lake: records gone
from Kafka before the stream read them, and a checkpoint lost. Each stops the stream in one line
naming what happened and the command that goes on; following it ends with verify passing, 0 lost
beyond what a person accepted and 0 counted twice."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from batch.rebuild import rebuild
from batch.verify import verify
from eo.core.tables import SILVER
from eo.runtime import lake
from eo.runtime.cli import NotReady
from eo.runtime.spark import close_state_stores
from ops import source_gaps
from ops.reset import reset
from streaming.query import Knobs
from streaming.run import QUERY, run
from tests.conftest import settings_env
from tests.integration.producing import produce

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # about three minutes


def delete_records(settings, partition: int, before: int) -> None:
    """What Kafka's retention (or `kafka-delete-records`) does: the partition's records before `before` go."""
    admin = AdminClient({"bootstrap.servers": settings.kafka_bootstrap})
    for future in admin.delete_records([TopicPartition(settings.topic, partition, before)]).values():
        future.result()


def test_records_gone_from_kafka_and_a_lost_checkpoint_are_named_and_recovered(spark, pipeline, monkeypatch):
    produce(pipeline, 2000, seed=21)
    delete_records(pipeline, 0, 120)  # before the stream's first start
    with pytest.raises(NotReady) as refused:
        run(pipeline, Knobs(until_caught_up=True))
    line = str(refused.value)
    assert (
        f"records lost at the source before the stream read them, {pipeline.topic} partition 0 offsets [0, 120)" in line
    )
    assert "(120 records)" in line and "python -m ops.source_gaps accept" in line and "\n" not in line
    assert not Path(pipeline.checkpoint_path(QUERY), "offsets").exists()  # refused before reading anything

    for name, value in settings_env(pipeline).items():  # the command line reads its settings from them
        monkeypatch.setenv(name, value)
    assert source_gaps.main(["accept", "--by", "tester", "--reason", "retention ran early"]) == 0
    assert run(pipeline, Knobs(until_caught_up=True)) == 0
    events = lake.read(spark, pipeline, SILVER).count()

    # The checkpoint is lost (a bad cleanup) once the stream has stopped: here, in this process,
    # its engine state closed first (its maintenance would go on writing snapshots into it).
    close_state_stores()
    shutil.rmtree(pipeline.checkpoint_path(QUERY))
    produce(pipeline, 2000, seed=21, label="again")  # the same events again: copies, every one
    with pytest.raises(NotReady, match=rf"has no batch, but silver holds {events:,} events"):
        run(pipeline, Knobs(until_caught_up=True))
    assert lake.read(spark, pipeline, SILVER).count() == events  # refused: nothing accepted twice

    assert reset(pipeline) == 0
    assert run(pipeline, Knobs(until_caught_up=True)) == 0
    silver = lake.read(spark, pipeline, SILVER)
    # Copies of accepted events stayed copies; the events lost at the source, sent again, are new.
    assert silver.count() == silver.select("event_id").distinct().count() < events + 120
    rebuild(spark, pipeline)
    verdict = verify(spark, pipeline)
    counts = verdict["reconciliation"]
    assert verdict["passed"], verdict
    assert counts["lost"] == 0 and counts["lost_at_source"] == 120, counts
    assert [g["records"] for g in counts["source_gaps"]] == [120]


def test_maintenance_and_the_live_stream_break_neither_each_other_nor_the_data(spark, pipeline, tmp_path):
    """The weekly OPTIMIZE and VACUUM, run again and again while the stream commits small batches
    into the same tables: every run ends with a line per table and no failure, the stream keeps
    committing (its commits made again on what a compaction left), and nothing is lost or doubled."""
    from batch.maintenance import maintain
    from lab.bench.pipeline import caught_up
    from lab.instances import Instance, committed_batches
    from tests.conftest import settings_env

    produce(pipeline, 3000, seed=31)
    stream = Instance(1, pipeline, settings_env(pipeline), tmp_path / "stream.log",
                      ["run", "--trigger-seconds", "1", "--max-offsets-per-trigger", "400"]).start()  # fmt: skip
    try:
        assert stream.wait_first_commit(240) is not None, stream.log.read_text()[-3000:]
        runs, seeds, deadline = [], iter((32, 33, 34)), time.monotonic() + 420
        while (seed := next(seeds, None)) is not None or not caught_up(pipeline):
            if seed is not None:
                produce(pipeline, 1500, seed=seed)
            runs.append(maintain(pipeline, optimize=True, retention_hours=168))  # again and again, beside it
            assert stream.alive, stream.log.read_text()[-3000:]
            assert time.monotonic() < deadline, "the stream did not catch up beside maintenance"
        assert committed_batches(pipeline) > 10 and len(runs) > 3, (committed_batches(pipeline), len(runs))
    finally:
        stream.kill()
    assert not [(name, d.failed) for done in runs for name, d in done.items() if d.failed]
    assert sum(d.compacted for done in runs for d in done.values()) > 0, "nothing was compacted beside the stream"
    rebuild(spark, pipeline)
    verdict = verify(spark, pipeline)
    assert verdict["passed"], verdict
    assert verdict["reconciliation"]["lost"] == 0 and verdict["reconciliation"]["acked"] == 7500
