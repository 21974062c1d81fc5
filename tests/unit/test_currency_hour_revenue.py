"""currency_hour_revenue, the orders source's gold table (eo/core/gold/currency_hour_revenue.py and its
transform): exact sums however orders are split into tasks and batches; the rebuild's rows (the
Additive rule's batch execution, in Spark) equal the transform of all orders at once; its
declaration is checked against the orders' silver, not the clickstream's."""

import datetime as dt
import random
from decimal import Decimal

import pyarrow as pa
import pytest

from eo.core.declaration import added_up, arrow_type, recomputed, silver_columns
from eo.core.gold import EVERY
from eo.core.sources import DECLARED
from eo.core.transforms.rules import rows_of
from tests.unit.test_task_gold import spread

pytestmark = pytest.mark.unit
TABLE = EVERY["currency_hour_revenue"]
ORDERS = DECLARED["orders"]
T0 = dt.datetime(2026, 11, 20, 9, 30, tzinfo=dt.UTC)
SCHEMA = pa.schema([(f.name, arrow_type(f.sql_type)) for f in ORDERS.fields])


def random_orders(rng: random.Random, n: int) -> pa.Table:
    """Silver's order rows: amounts up to the decimal's limit, several currencies and hours."""
    rows = [
        {
            "order_id": f"o{i}",
            "user_id": f"u{rng.randint(0, 9)}",
            "amount": Decimal(rng.choice([0, rng.randint(1, 10**6), 10**16 - 1])) / 100,
            "currency": rng.choice(ORDERS.by_name["currency"].allowed),
            "event_time": T0 + dt.timedelta(seconds=rng.randint(0, 4 * 3600)),
        }
        for i in range(n)
    ]
    return pa.Table.from_pylist(rows, SCHEMA)


def _sorted(table: pa.Table) -> pa.Table:
    return table.sort_by([(c, "ascending") for c in TABLE.key])


def test_it_is_the_orders_table_checked_against_the_orders_silver():
    assert TABLE.source == "orders" and TABLE.path == "gold/currency_hour_revenue"
    assert set(TABLE.explain.equal) <= silver_columns("orders")
    assert "currency" not in silver_columns("clicks")


@pytest.mark.parametrize("seed", range(4))
def test_sums_of_any_split_add_up_to_the_whole_exactly(seed):
    rng = random.Random(seed)
    orders = random_orders(rng, 300)
    parts = [TABLE.transform(part) for part in spread(rng, orders, 5)]
    whole = _sorted(recomputed(TABLE, orders))
    assert _sorted(added_up(TABLE, pa.concat_tables(parts))) == whole
    total = sum(row["revenue"] for row in whole.to_pylist())
    assert total == sum(orders["amount"].to_pylist())  # not a cent lost to rounding
    assert sum(row["orders"] for row in whole.to_pylist()) == orders.num_rows
    assert all(row["window_start"].minute == 0 for row in whole.to_pylist())


def test_the_rebuild_gives_the_transforms_rows(spark):
    orders = random_orders(random.Random(9), 400)
    rebuilt = rows_of(TABLE, spark.createDataFrame(orders.to_pandas()).repartition(3)).toArrow()
    expected = recomputed(TABLE, orders)
    assert _sorted(rebuilt.cast(expected.schema)) == _sorted(expected)
