"""A reset bootstraps the stream from bronze (docs/design.md invariant 7): derived tables rebuilt in
place, the engine state seeded from them, a new checkpoint. Copies of events accepted before the
reset, sent again after it (some with a changed payload), are still recognised as copies."""

import json
from pathlib import Path

import pytest

from batch.rebuild import rebuild
from batch.verify import verify
from eo.core.tables import SILVER
from eo.runtime import lake
from ops.reset import reset
from producer.generator import ClickstreamGenerator, Message, Rates
from producer.publish import publish
from streaming.query import Knobs
from streaming.run import QUERY, run
from tests.integration.producing import produce

pytestmark = pytest.mark.integration

NEW = ("event", "late", "very_late", "out_of_order")  # the generator's kinds of a valid, new event


def resend(settings, messages: list[Message], label: str) -> None:
    stats = publish(messages, settings, Path(settings.acks_root) / f"{label}.csv", log=lambda *_: None)
    assert stats.acked == len(messages)


def test_a_reset_rebuilds_from_bronze_and_old_copies_stay_copies(spark, pipeline):
    rates = Rates(duplicate=0.05, late=0.05)
    produce(pipeline, 4000, seed=3, rates=rates)
    assert run(pipeline, Knobs(until_caught_up=True)) == 0
    before = lake.read(spark, pipeline, SILVER).count()
    sent = ClickstreamGenerator(seed=3, rates=rates, span_hours=6, total_events=4000).messages()
    old = [m for m in sent if m.kind in NEW]  # the events accepted before the reset, as they were sent

    assert reset(pipeline) == 0
    archived = [p for p in Path(pipeline.checkpoint_root).iterdir() if p.name.startswith(f"{QUERY}.reset-")]
    assert archived, "the old checkpoint was not kept"
    assert lake.read(spark, pipeline, SILVER).count() == before  # rebuilt in place, identical

    # After the reset: new traffic, and old events again, some with another payload.
    changed = [Message(m.key, m.value.replace(b'"click"', b'"impression"'), "duplicate_variant") for m in old[:50]]
    resend(pipeline, old[100:300] + changed, "resent")
    produce(pipeline, 2000, seed=4, label="after")
    assert run(pipeline, Knobs(until_caught_up=True)) == 0

    silver = lake.read(spark, pipeline, SILVER)
    added = sum(1 for m in ClickstreamGenerator(seed=4, span_hours=6, total_events=2000).messages() if m.kind in NEW)
    assert silver.count() == silver.select("event_id").distinct().count() == before + added
    first = json.loads((Path(pipeline.checkpoint_path(QUERY)) / "metadata").read_text())["id"]
    old_id = json.loads((archived[0] / "metadata").read_text())["id"]
    assert first != old_id, "the new checkpoint kept the old idempotency id"
    rebuild(spark, pipeline)
    verdict = verify(spark, pipeline)
    assert verdict["passed"], verdict["tables"]
