"""The stream's incremental gold maintenance equals the batch recomputation, however the log
is cut into micro-batches, with late events, duplicates and replayed batches (the real query,
with a Delta table of records standing in for Kafka)."""

import itertools
import random

import pytest

from batch.rebuild import rebuild
from eo.core.tables import CAMPAIGN_MINUTE_METRICS, QUARANTINE, SILVER, USER_SESSIONS
from producer.generator import ClickstreamGenerator, Rates
from tests.helpers import event, forget_last_commit, prepare_lake, records, sorted_rows, stream

pytestmark = [pytest.mark.unit, pytest.mark.slow]

TABLES = (CAMPAIGN_MINUTE_METRICS, USER_SESSIONS, SILVER, QUARANTINE)


def run_stream(spark, settings, rows, cuts, replay=()):
    prepare_lake(spark, settings)
    bounds = [0, *cuts, len(rows)]
    for batch_id, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        stream(spark, settings, [rows[lo:hi]])
        if batch_id in replay:  # a crash after the commits, before the checkpoint: same batch again
            forget_last_commit(settings)
            stream(spark, settings, [[]])


def assert_stream_equals_batch(spark, settings):
    rebuild(spark, settings)
    for table in TABLES:
        streamed = sorted_rows(spark, settings, table)
        rebuilt = sorted_rows(spark, settings, table, "rebuild")
        assert streamed == rebuilt, f"{table.name} differs"
        assert streamed, f"{table.name} is empty"


def test_late_event_joins_two_sessions_and_fixes_its_window(spark, lake):
    payloads = [
        event("a", 0, user="u1"),
        event("b", 40, user="u1"),  # 40 minutes later: a second session
        event("c", 20.5, user="u1", kind="purchase", price="3.10"),  # late: bridges both
        event("d", 0.5, user="u2"),  # late into the first minute's window
        event("a", 0, user="u1"),  # a duplicate, after the fact
        "{broken",
    ]
    rows = records(payloads)
    run_stream(spark, lake, rows, cuts=[2, 3, 4])
    sessions = sorted_rows(spark, lake, USER_SESSIONS)
    assert [(s.user_id, s.events, str(s.revenue)) for s in sessions] == [("u1", 3, "3.10"), ("u2", 1, "0.00")]
    assert_stream_equals_batch(spark, lake)


@pytest.mark.parametrize("seed", [11])
def test_random_cuts_late_data_and_replays_converge_to_batch(spark, lake, seed):
    rates = Rates(duplicate=0.08, late=0.08, very_late=0.03, out_of_order=0.2, malformed=0.05)
    generator = ClickstreamGenerator(seed=seed, rates=rates, span_hours=6, total_events=700, users=12)
    rows = records(m.value for m in generator.messages())
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(rows)), 4))
    run_stream(spark, lake, rows, cuts, replay={rng.randrange(5)})
    assert_stream_equals_batch(spark, lake)
