"""ad_hour_revenue's transform: a set of events -> purchases and revenue per ad and event-time hour."""

import pyarrow as pa
import pyarrow.compute as pc

REVENUE = pa.decimal128(18, 2)


def hour_revenue(events: pa.Table) -> pa.Table:
    """Purchases (count, and their prices summed exactly) per ad_id and event-time hour (UTC)."""
    bought = events.filter(pc.equal(events["event_type"], "purchase"))
    hours = pc.floor_temporal(bought["event_time"], unit="hour")
    keyed = pa.table({"ad_id": bought["ad_id"], "window_start": hours, "price": bought["price"]})
    sums = keyed.group_by(["ad_id", "window_start"]).aggregate([([], "count_all"), ("price", "sum")])
    return pa.table(
        {
            "ad_id": sums["ad_id"],
            "window_start": sums["window_start"],
            "window_date": pc.cast(sums["window_start"], pa.date32()),
            "purchases": sums["count_all"],
            "revenue": pc.cast(pc.fill_null(sums["price_sum"], 0), REVENUE),
        }
    )
