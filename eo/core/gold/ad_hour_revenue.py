"""ad_hour_revenue: per ad and event-time hour, the purchases and their revenue, exact however
late an event comes. Added by docs/extending.md's walk-through: this file and its transform."""

import datetime as dt

from eo.core.declaration import Additive, Domain, Explain, GoldTable
from eo.core.transforms.ad_hour_revenue import hour_revenue

TABLE = GoldTable(
    name="ad_hour_revenue",
    source="clicks",
    columns="ad_id STRING, window_start TIMESTAMP, window_date DATE, purchases BIGINT, revenue DECIMAL(18,2)",
    key=("ad_id", "window_start"),
    range_column="window_start",
    partition_by=("window_date",),
    transform=hour_revenue,
    merge=Additive(values=("purchases", "revenue")),
    domain=Domain(minimum={"purchases": 1, "revenue": 0}),
    explain=Explain(equal=("ad_id",), window=dt.timedelta(hours=1)),
)
