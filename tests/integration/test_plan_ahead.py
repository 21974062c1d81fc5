"""A plan built ahead (a standby's, streaming/query.py `Planned`) is used only while what it read
when it was built is unchanged: the source, the poison list and the catalogue."""

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from eo.core.tables import CAMPAIGNS
from eo.runtime.environment import environment
from streaming import poison
from streaming.plan import Source
from streaming.query import Knobs, plan_query, start_query
from streaming.run import plan_ahead
from streaming.takeover import prepare

pytestmark = pytest.mark.integration


@pytest.fixture
def prepared(spark, lake):
    prepare(spark, lake)
    return lake


def test_an_unchanged_plan_holds(spark, prepared):
    source = Source(max_offsets_per_trigger=2_500)
    planned = plan_query(spark, prepared, source)
    assert planned.holds(prepared, source)
    assert planned.holds(prepared, Source(max_offsets_per_trigger=2_500))  # equal, not the same object


def test_another_source_does_not_hold(spark, prepared):
    planned = plan_query(spark, prepared, Source(max_offsets_per_trigger=2_500))
    assert not planned.holds(prepared, Source(max_offsets_per_trigger=5_000))
    # A checkpoint reset while the standby waited: the takeover starts a new one at given offsets.
    assert not planned.holds(prepared, Source('{"events": {"0": 7}}', max_offsets_per_trigger=2_500))


def test_poison_recorded_meanwhile_makes_it_stale(spark, prepared):
    source = Source()
    planned = plan_query(spark, prepared, source)
    found = [(poison.Span("events", 0, 41, 41), "ValueError")]
    poison.record_isolation(prepared, 3, found, 0.5, {("events", 0, 41): ("k", "{not json")})
    assert not planned.holds(prepared, source), "a plan without the new poison would read it again"
    assert plan_query(spark, prepared, source).holds(prepared, source)


def test_a_catalogue_change_makes_it_stale(spark, prepared):
    source = Source()
    planned = plan_query(spark, prepared, source)
    campaigns = environment(prepared).table(CAMPAIGNS.name)
    new = pa.table({"campaign_id": ["c-new"], "campaign_name": ["new"], "advertiser_id": ["a-new"]})
    write_deltalake(prepared.table_path(CAMPAIGNS.name), new.cast(campaigns.schema()), mode="append")
    assert not planned.holds(prepared, source), "a plan with the old catalogue would refuse the new campaign"


def test_no_plan_ahead_before_the_active_instance_has_a_checkpoint(spark, prepared):
    # Its starting offsets are decided at the takeover (streaming/run.py).
    assert plan_ahead(spark, prepared, Knobs()) is None


def test_the_seeds_reading_plans_its_own(spark, prepared):
    planned = plan_query(spark, prepared, Source())
    with pytest.raises(ValueError, match="seed"):
        start_query(spark, prepared, Knobs(), None, Source(), seeding=True, planned=planned)
