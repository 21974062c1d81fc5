"""One definition of "the first copy", shared by stream and rebuild, wherever copies land
(eo/core/transforms/dedup.py): the lowest (ingest batch, topic, partition, offset).

Copies of one event carry different payloads here, so a different choice shows in every table:
silver's price, the metrics' revenue and the sessions. The real streaming query runs (a Delta
table of records stands in for Kafka); a tuple of lists is one micro-batch read by several tasks.
"""

import itertools
import json
import random

import pytest
from pyspark.sql import functions as F

from batch.rebuild import rebuild
from eo.core.tables import BRONZE, CAMPAIGN_MINUTE_METRICS, INGEST_BATCH, QUARANTINE, SILVER, USER_SESSIONS
from eo.runtime import lake as lake_io
from producer.generator import ClickstreamGenerator, Rates
from tests.helpers import PRODUCED_AT, bronze_frame, event, micro_batch, prepare_lake, records, sorted_rows, stream

pytestmark = pytest.mark.unit

TABLES = (SILVER, QUARANTINE, CAMPAIGN_MINUTE_METRICS, USER_SESSIONS)


def copy(event_id: str, price: str, partition: int, offset: int, user: str = "u1") -> tuple:
    """One record of a purchase on a given partition and offset."""
    (row,) = records([event(event_id, 1, user=user, kind="purchase", price=price)])
    return (*row[:3], partition, offset, PRODUCED_AT)


def silver_prices(spark, settings, namespace="main") -> dict[str, str]:
    return {r.event_id: str(r.price) for r in sorted_rows(spark, settings, SILVER, namespace)}


def assert_stream_equals_rebuild(spark, settings) -> None:
    rebuild(spark, settings)
    for table in TABLES:
        assert sorted_rows(spark, settings, table) == sorted_rows(spark, settings, table, "rebuild"), table.name


@pytest.mark.slow
def test_stream_and_rebuild_keep_the_same_copy_wherever_copies_land(spark, lake):
    """Each event is one case; one lake, so that the cases cost one rebuild."""
    prepare_lake(spark, lake)
    first = [
        # In one batch read by two tasks, whichever task's rows reach the state first (mirrored):
        # a, x: the lower partition wins; b, y: in one partition, the lower offset wins.
        (
            [copy("a", "1.00", 1, 1), copy("x", "2.00", 0, 6), copy("b", "1.00", 0, 9), copy("y", "2.00", 0, 4)],
            [copy("a", "2.00", 0, 1), copy("x", "1.00", 1, 7), copy("b", "2.00", 0, 2), copy("y", "1.00", 0, 11)],
        ),
        # c: across batches, the earlier batch wins over a lower partition.
        [copy("c", "1.00", 1, 2), copy("d", "1.00", 1, 3)],
        [copy("c", "2.00", 0, 3)],
    ]
    stream(spark, lake, first)
    # d: after a restart (a new instance, a higher epoch), the copy ingested before still wins.
    stream(spark, lake, [[copy("c", "3.00", 0, 4), copy("d", "2.00", 0, 5)]], batch=micro_batch(lake))
    assert silver_prices(spark, lake) == {"a": "2.00", "b": "2.00", "x": "2.00", "y": "2.00", "c": "1.00", "d": "1.00"}
    marks = lake_io.read(spark, lake, BRONZE).groupBy(INGEST_BATCH).count().orderBy(INGEST_BATCH).collect()
    assert [m["count"] for m in marks] == [8, 2, 1, 2], "each batch's records carry one mark, growing"
    assert_stream_equals_rebuild(spark, lake)


def test_an_older_bronze_without_the_column_gains_it_when_a_job_starts(spark, lake):
    bronze_frame(spark, [copy("a", "1.00", 0, 0)]).write.format("delta").save(lake.table_path(BRONZE.name))
    assert INGEST_BATCH not in lake_io.read(spark, lake, BRONZE).columns
    lake_io.ensure_table(spark, lake, BRONZE)  # what every job does first
    assert lake_io.read(spark, lake, BRONZE).where(F.col(INGEST_BATCH).isNull()).count() == 1
    assert lake_io.add_new_columns(spark, lake, BRONZE) == []


@pytest.mark.slow
@pytest.mark.parametrize("seed", [3])
def test_a_producer_keyed_by_user_with_changed_copies_stream_equals_rebuild(spark, lake, seed):
    """Copies re-sent with another price land on any partition (keyed by user, then re-keyed),
    in the same batch or a later one: stream and rebuild keep the same copy every time."""
    rng = random.Random(seed)
    rates = Rates(duplicate=0.0, malformed=0.0)
    generator = ClickstreamGenerator(seed=seed, rates=rates, span_hours=2, total_events=240, users=9)
    events = [json.loads(m.value) for m in generator.messages()]
    for original in rng.sample(events, 60):  # changed copies, keyed by user or by event id
        events.append({**original, "event_type": "purchase", "price": f"{rng.randint(1, 99)}.00"})
    rng.shuffle(events)
    rows = records(events[: len(events) // 2], partitions=3, key_by="user_id")
    rows += records(events[len(events) // 2 :], partitions=3, key_by="event_id")
    rows = [(*r[:4], offset, r[5]) for offset, r in enumerate(rows)]  # unique offsets per partition
    rng.shuffle(rows)
    cuts = sorted(rng.sample(range(1, len(rows)), 3))
    pairs = itertools.pairwise([0, *cuts, len(rows)])
    batches = [tuple(rows[lo:hi][i::2] for i in range(2)) for lo, hi in pairs]  # two files a batch
    prepare_lake(spark, lake)
    stream(spark, lake, batches[:2])
    stream(spark, lake, batches[2:], batch=micro_batch(lake))  # and a restart in between
    assert_stream_equals_rebuild(spark, lake)


@pytest.mark.slow  # three stream runs, a restart and a rebuild: minutes on a loaded machine
def test_a_user_counts_once_a_minute_wherever_its_events_land(spark, lake):
    """The user-tuple state marks one event per (campaign, type, minute, user) ever: here u1's
    events of one minute land in one batch read by two tasks, in a later batch, and after a
    restart, with other users beside them. The minute counts 3 users, and equals the rebuild."""
    prepare_lake(spark, lake)

    def purchase(n: int, partition: int, offset: int, user: str = "u1") -> tuple:
        return copy(f"e{n}", "1.00", partition, offset, user)

    stream(spark, lake, [([purchase(1, 1, 1), purchase(2, 0, 5)], [purchase(3, 0, 2), purchase(4, 1, 7, "u2")])])
    stream(spark, lake, [[purchase(5, 0, 9), purchase(6, 1, 8, "u2")]])
    stream(spark, lake, [[purchase(7, 1, 9), purchase(8, 0, 10, "u3")]], batch=micro_batch(lake))
    metrics = sorted_rows(spark, lake, CAMPAIGN_MINUTE_METRICS)
    assert [(m.events, m.distinct_users, str(m.revenue)) for m in metrics] == [(8, 3, "8.00")]
    assert_stream_equals_rebuild(spark, lake)
