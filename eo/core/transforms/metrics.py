"""Gold table 1: per-minute event-time metrics per campaign and event type.

One definition, two executions (docs/design.md): `minute_metrics` computes the metrics of a set of
events, on Arrow columns. The batch rebuild applies it to all of silver, a group of keys at a
time (`campaign_minute_metrics`, with Spark's applyInArrow); the stream applies it to each
micro-batch's new events and adds the result to gold (streaming/microbatch.py).

The stream runs it where the rows are: each task of a micro-batch applies it to its own new
events, and the driver adds the tasks' rows up (`added_up`), one row per key. Distinct users add
up across tasks and micro-batches because the stream counts only the (campaign, type, minute,
user) tuples that no stored session of the user holds, each once, in the task that owns the user
(`users_added`; eo/core/transforms/sessions.py `new_user_tuples`); the batch passes every tuple
once (`user_tuples`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from eo.core.optional import module

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

from eo.core.tables import METRIC_WINDOW

# Not on Airflow on MWAA, which reads the declarations and calls none of this (eo/core/optional.py).
F = module("pyspark.sql.functions")

NAME = "campaign_minute_metrics"  # declared in eo/core/gold/campaign_minute_metrics.py
METRIC_KEY = ["campaign_id", "event_type", "window_start"]
COLUMNS = (
    "campaign_id STRING, event_type STRING, window_start TIMESTAMP, window_date DATE, "
    "events BIGINT, distinct_users BIGINT, revenue DECIMAL(18,2)"
)
REVENUE = pa.decimal128(18, 2)
TIME = pa.timestamp("us", tz="UTC")
GROUPS = 16  # key groups per batch rebuild: each one a call of minute_metrics


def window_start(event_time: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """The event-time minute an event counts in (UTC)."""
    return pc.floor_temporal(event_time, unit=METRIC_WINDOW)


def window_start_column(event_time: str = "event_time") -> Column:
    """The same minute as a Spark column, for keys the engine computes (tests/unit/test_metrics.py
    checks the two agree)."""
    return F.date_trunc(METRIC_WINDOW, F.col(event_time))


def purchase_revenue(events: pa.Table) -> pa.ChunkedArray:
    """Each event's contribution to revenue: its price if it is a purchase, else 0, exactly."""
    zero = pa.scalar(0, events.schema.field("price").type)
    return pc.if_else(pc.equal(events["event_type"], "purchase"), pc.coalesce(events["price"], zero), zero)


def user_tuples(events: pa.Table) -> pa.Table:
    """Each (campaign, type, minute, user) the events hold, once."""
    keyed = events.select(["campaign_id", "event_type", "user_id"]).append_column(
        "window_start", window_start(events["event_time"])
    )
    return keyed.group_by([*METRIC_KEY, "user_id"]).aggregate([])


def minute_metrics(events: pa.Table, users: pa.Table) -> pa.Table:
    """events (campaign_id, event_type, event_time, price) and user tuples (METRIC_KEY + user_id,
    each once) -> one row per key: events, distinct users and revenue."""
    keyed = pa.table(
        {
            "campaign_id": events["campaign_id"],
            "event_type": events["event_type"],
            "window_start": window_start(events["event_time"]),
            "_revenue": purchase_revenue(events),
        }
    )
    counts = keyed.group_by(METRIC_KEY).aggregate([("_revenue", "count"), ("_revenue", "sum")])
    distinct = users.select([*METRIC_KEY, "user_id"]).group_by(METRIC_KEY).aggregate([("user_id", "count")])
    joined = counts.join(distinct, METRIC_KEY, join_type="full outer")
    return pa.table(
        {
            "campaign_id": joined["campaign_id"],
            "event_type": joined["event_type"],
            "window_start": joined["window_start"],
            "window_date": pc.cast(joined["window_start"], pa.date32()),
            "events": pc.fill_null(joined["_revenue_count"], 0),
            "distinct_users": pc.fill_null(joined["user_id_count"], 0),
            "revenue": pc.cast(pc.fill_null(joined["_revenue_sum"], 0), REVENUE),
        }
    )


def users_added(tuples: pa.Table) -> pa.Table:
    """User tuples new to their keys (METRIC_KEY + user_id, each once) -> rows of `minute_metrics`
    that add only distinct users."""
    counts = tuples.group_by(METRIC_KEY).aggregate([("user_id", "count")])
    return pa.table(
        {
            **{name: counts[name] for name in METRIC_KEY},
            "window_date": pc.cast(counts["window_start"], pa.date32()),
            "events": pa.repeat(pa.scalar(0, pa.int64()), counts.num_rows),
            "distinct_users": counts["user_id_count"],
            "revenue": pa.repeat(pa.scalar(0, REVENUE), counts.num_rows),
        }
    )


def added_up(parts: pa.Table) -> pa.Table:
    """Rows of `minute_metrics` (of disjoint events and user tuples) -> one row per key, their sums."""
    sums = parts.group_by(METRIC_KEY).aggregate([("events", "sum"), ("distinct_users", "sum"), ("revenue", "sum")])
    return pa.table(
        {
            "campaign_id": sums["campaign_id"],
            "event_type": sums["event_type"],
            "window_start": sums["window_start"],
            "window_date": pc.cast(sums["window_start"], pa.date32()),
            "events": sums["events_sum"],
            "distinct_users": sums["distinct_users_sum"],
            "revenue": pc.cast(sums["revenue_sum"], REVENUE),
        }
    )


def _metrics_of_group(events: pa.Table) -> pa.Table:
    return minute_metrics(events, user_tuples(events))


def batch_metrics(events: pa.Table) -> pa.Table:
    """The declaration's transform: the minute metrics of a batch's new events, their distinct
    users left 0 (the platform counts them against the users' stored sessions: in the stream the
    sessions' owners, `users_added`; in the rebuild and explain, every user tuple once)."""
    return minute_metrics(events, NO_USERS)


NO_USERS = pa.schema(
    [("campaign_id", pa.string()), ("event_type", pa.string()), ("user_id", pa.string()), ("window_start", TIME)]
).empty_table()


def campaign_minute_metrics(silver: DataFrame) -> DataFrame:
    """The batch execution: every key's events in one group, `minute_metrics` per group."""
    group = F.pmod(F.xxhash64("campaign_id", "event_type", window_start_column()), F.lit(GROUPS))
    events = silver.select("campaign_id", "event_type", "event_time", "user_id", "price")
    return events.groupBy(group.alias("_group")).applyInArrow(lambda _key, table: _metrics_of_group(table), COLUMNS)
