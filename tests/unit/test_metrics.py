import datetime as dt
import random
from decimal import Decimal

import pyarrow as pa
import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from eo.core.tables import CAMPAIGN_MINUTE_METRICS
from eo.core.transforms.metrics import (
    METRIC_KEY,
    campaign_minute_metrics,
    minute_metrics,
    user_tuples,
    window_start,
    window_start_column,
)

pytestmark = pytest.mark.unit

T0 = dt.datetime(2026, 11, 20, 10, 0, 0, tzinfo=dt.UTC)
SCHEMA = (
    "event_id STRING, event_type STRING, event_time TIMESTAMP, user_id STRING, campaign_id STRING, price DECIMAL(10,2)"
)
ARROW = pa.schema(
    [
        ("event_id", pa.string()),
        ("event_type", pa.string()),
        ("event_time", pa.timestamp("us", tz="UTC")),
        ("user_id", pa.string()),
        ("campaign_id", pa.string()),
        ("price", pa.decimal128(10, 2)),
    ]
)


def test_counts_distinct_users_and_exact_revenue(spark):
    events = spark.createDataFrame(
        [
            ("1", "purchase", T0, "u1", "c1", Decimal("0.10")),
            ("2", "purchase", T0 + dt.timedelta(seconds=59), "u2", "c1", Decimal("0.20")),
            ("3", "purchase", T0 + dt.timedelta(seconds=30), "u1", "c1", Decimal("99999999.99")),
            ("4", "purchase", T0 + dt.timedelta(seconds=60), "u1", "c1", Decimal("1.00")),
            ("5", "click", T0, "u3", "c1", None),
        ],
        SCHEMA,
    )
    expected = spark.createDataFrame(
        [
            ("c1", "purchase", T0, T0.date(), 3, 2, Decimal("100000000.29")),
            ("c1", "purchase", T0 + dt.timedelta(minutes=1), T0.date(), 1, 1, Decimal("1.00")),
            ("c1", "click", T0, T0.date(), 1, 1, Decimal("0.00")),
        ],
        CAMPAIGN_MINUTE_METRICS.ddl,
    )
    assertDataFrameEqual(campaign_minute_metrics(events), expected)


def test_the_engine_and_the_arrow_functions_agree_on_the_minute(spark):
    """The stream keys its distinct-user state with Spark's minute, the metrics with Arrow's."""
    edges = [T0, T0 - dt.timedelta(microseconds=1), T0 + dt.timedelta(seconds=59, microseconds=999_999)]
    edges += [dt.datetime(2000, 1, 1, tzinfo=dt.UTC), dt.datetime(2026, 12, 31, 23, 59, 59, tzinfo=dt.UTC)]
    frame = spark.createDataFrame([(t,) for t in edges], "event_time TIMESTAMP")
    engine = [r[0] for r in frame.select(window_start_column()).collect()]
    arrow = window_start(pa.array(edges, pa.timestamp("us", tz="UTC"))).to_pylist()
    assert engine == [t.replace(tzinfo=None) for t in arrow]


def random_events(rng: random.Random, n: int) -> list[tuple]:
    rows = []
    for i in range(n):
        kind = rng.choice(["impression", "click", "purchase"])
        price = Decimal(rng.randint(0, 10**6)) / 100 if kind == "purchase" else None
        when = T0 + dt.timedelta(seconds=rng.randint(0, 600))
        rows.append((f"e{i}", kind, when, f"u{rng.randint(0, 5)}", f"c{rng.randint(0, 2)}", price))
    return rows


def added(parts: list[pa.Table]) -> dict:
    total: dict = {}
    for part in parts:
        for row in part.to_pylist():
            key = tuple(row[k] for k in METRIC_KEY)
            old = total.get(key, (0, 0, Decimal(0)))
            total[key] = (old[0] + row["events"], old[1] + row["distinct_users"], old[2] + row["revenue"])
    return total


@pytest.mark.parametrize("seed", range(5))
def test_increments_of_new_events_and_unseen_users_add_up_to_the_whole(seed):
    """The stream's arithmetic: each micro-batch adds minute_metrics of its new events and of the
    user tuples never seen before; the sums equal the metrics of everything at once."""
    rng = random.Random(seed)
    table = pa.Table.from_pylist([dict(zip(ARROW.names, r, strict=True)) for r in random_events(rng, 300)], ARROW)
    cuts = sorted(rng.sample(range(1, 300), 4))
    parts, seen = [], set()
    for lo, hi in zip([0, *cuts], [*cuts, 300], strict=True):
        batch = table.slice(lo, hi - lo)
        tuples = user_tuples(batch).to_pylist()
        fresh = [t for t in tuples if tuple(t.values()) not in seen]
        seen.update(tuple(t.values()) for t in tuples)
        users = pa.Table.from_pylist(fresh, user_tuples(batch).schema)
        parts.append(minute_metrics(batch, users))
    assert added(parts) == added([minute_metrics(table, user_tuples(table))])


def test_batch_execution_groups_every_key_whole(spark):
    """applyInArrow runs minute_metrics per group of keys: no key may be split across groups."""
    rows = random_events(random.Random(7), 2000)
    frame = spark.createDataFrame(rows, SCHEMA).repartition(8)
    arrow = pa.Table.from_pylist([dict(zip(ARROW.names, r, strict=True)) for r in rows], ARROW)
    whole = minute_metrics(arrow, user_tuples(arrow))
    batch = campaign_minute_metrics(frame).withColumn("window_start", F.col("window_start"))
    assert batch.count() == whole.num_rows
    expected = {tuple(r[k] for k in METRIC_KEY): r for r in whole.to_pylist()}
    for r in batch.collect():
        e = expected[(r.campaign_id, r.event_type, r.window_start.replace(tzinfo=dt.UTC))]
        assert (r.events, r.distinct_users, r.revenue) == (e["events"], e["distinct_users"], e["revenue"])
