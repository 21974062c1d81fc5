"""currency_hour_revenue: per currency and event-time hour, the orders and their revenue, exact
however late an order comes. The orders source's table: this file and its transform."""

import datetime as dt

from eo.core.declaration import Additive, Domain, Explain, GoldTable
from eo.core.sources import DECLARED
from eo.core.transforms.currency_hour_revenue import hour_revenue

TABLE = GoldTable(
    name="currency_hour_revenue",
    source="orders",
    columns="currency STRING, window_start TIMESTAMP, window_date DATE, orders BIGINT, revenue DECIMAL(28,2)",
    key=("currency", "window_start"),
    range_column="window_start",
    partition_by=("window_date",),
    transform=hour_revenue,
    merge=Additive(values=("orders", "revenue")),
    domain=Domain(
        minimum={"orders": 1, "revenue": 0},
        in_set={"currency": DECLARED["orders"].by_name["currency"].allowed},
    ),
    explain=Explain(equal=("currency",), window=dt.timedelta(hours=1)),
)
