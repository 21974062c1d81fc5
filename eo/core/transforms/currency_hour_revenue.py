"""currency_hour_revenue's transform: a set of orders -> their count and amounts per currency and
event-time hour."""

import pyarrow as pa
import pyarrow.compute as pc

# A sum of DECIMAL(18,2) amounts, as Spark types it (precision + 10): exact for any hour's orders.
REVENUE = pa.decimal128(28, 2)


def hour_revenue(orders: pa.Table) -> pa.Table:
    """Orders (count, and their amounts summed exactly) per currency and event-time hour (UTC)."""
    hours = pc.floor_temporal(orders["event_time"], unit="hour")
    keyed = pa.table({"currency": orders["currency"], "window_start": hours, "amount": orders["amount"]})
    sums = keyed.group_by(["currency", "window_start"]).aggregate([([], "count_all"), ("amount", "sum")])
    return pa.table(
        {
            "currency": sums["currency"],
            "window_start": sums["window_start"],
            "window_date": pc.cast(sums["window_start"], pa.date32()),
            "orders": sums["count_all"],
            "revenue": pc.cast(pc.fill_null(sums["amount_sum"], 0), REVENUE),
        }
    )
