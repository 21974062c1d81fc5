"""A gold table added to a running stream needs no reset (docs/extending.md): its checkpoint holds
nothing of gold, so the stream goes on with the same checkpoint, the new table starts empty and
gets each later batch's events, and a rebuild into the live tables fills the days before it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from batch.rebuild import rebuild
from batch.verify import verify
from eo.core.gold import DECLARED
from eo.runtime.lake import ensure_tables
from eo.runtime.live_tables import claim_while_stopped
from producer.generator import ClickstreamGenerator
from tests.conftest import lake_settings
from tests.helpers import BASE, prepare_lake, records, sorted_rows, stream

pytestmark = [pytest.mark.unit, pytest.mark.slow]  # two micro-batches, two rebuilds, a verify

ADDED = DECLARED["ad_hour_revenue"].table


def test_a_table_added_between_batches_is_filled_by_a_rebuild_without_a_reset(spark, tmp_path):
    settings = lake_settings(tmp_path)
    rows = records(m.value for m in ClickstreamGenerator(seed=5, start=BASE, span_hours=6, total_events=400).messages())
    prepare_lake(spark, settings)
    stream(spark, settings, [rows[:250]])
    shutil.rmtree(settings.table_path(ADDED.name))  # as if the table had been declared only now
    checkpoint = sorted(p.name for p in Path(settings.checkpoint_root).rglob("*"))
    ensure_tables(spark, settings)  # what the stream's start does: the new table, empty
    stream(spark, settings, [rows[250:]])  # the same checkpoint: no reset
    assert {p.name for p in Path(settings.checkpoint_root).rglob("*")} >= set(checkpoint)
    partial = sorted_rows(spark, settings, ADDED)
    rebuild(spark, settings)
    full = sorted_rows(spark, settings, ADDED, "rebuild")
    assert 0 < len(partial) and sum(r.purchases for r in partial) < sum(r.purchases for r in full)
    rebuild(spark, settings, target="main", fence=claim_while_stopped(settings, "rebuilding --target main"))
    assert sorted_rows(spark, settings, ADDED) == full  # its history filled from bronze
    assert verify(spark, settings)["passed"]
