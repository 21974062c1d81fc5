"""Gold table 1: per-minute event-time metrics per campaign and event type."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs.tables import CAMPAIGN_MINUTE_METRICS

METRIC_KEY = list(CAMPAIGN_MINUTE_METRICS.key)


def with_window(events: DataFrame) -> DataFrame:
    return events.withColumn("window_start", F.date_trunc("minute", "event_time"))


def revenue(price_col: str = "price") -> F.Column:
    """Sum of purchase prices, exact: DECIMAL all the way, 0.00 when there were none."""
    purchase_price = F.when(F.col("event_type") == "purchase", F.col(price_col))
    return F.coalesce(F.sum(purchase_price), F.lit(0)).cast("decimal(18,2)")


def campaign_minute_metrics(silver: DataFrame) -> DataFrame:
    return (
        with_window(silver)
        .groupBy(*METRIC_KEY)
        .agg(
            F.count(F.lit(1)).alias("events"),
            F.count_distinct("user_id").alias("distinct_users"),
            revenue().alias("revenue"),
        )
        .withColumn("window_date", F.to_date("window_start"))
        .select(*CAMPAIGN_MINUTE_METRICS.columns)
    )


def affected_windows(new_events: DataFrame) -> DataFrame:
    """The metric keys a set of new events can change."""
    return with_window(new_events).select(*METRIC_KEY).distinct()
