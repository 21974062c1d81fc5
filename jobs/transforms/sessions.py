"""Gold table 2: user sessions, closed by 30 minutes of inactivity (event time).

An event at least SESSION_GAP after the previous one of the same user starts a new session,
the same boundary as Spark's session_window.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from jobs.tables import SESSION_GAP_MINUTES, USER_SESSIONS
from jobs.transforms.metrics import revenue


def gap() -> F.Column:
    """The inactivity gap as an interval column (built lazily: needs an active session)."""
    return F.expr(f"INTERVAL {SESSION_GAP_MINUTES} MINUTES")


def sessionize(events: DataFrame) -> DataFrame:
    by_user = Window.partitionBy("user_id").orderBy("event_time", "event_id")
    previous = F.lag("event_time").over(by_user)
    starts = F.when(previous.isNull() | (F.col("event_time") >= previous + gap()), 1).otherwise(0)
    numbered = events.withColumn("_starts", starts).withColumn(
        "_session", F.sum("_starts").over(by_user.rowsBetween(Window.unboundedPreceding, 0))
    )
    return (
        numbered.groupBy("user_id", "_session")
        .agg(
            F.min("event_time").alias("session_start"),
            F.max("event_time").alias("session_end"),
            F.count(F.lit(1)).alias("events"),
            revenue().alias("revenue"),
        )
        .withColumn("session_date", F.to_date("session_start"))
        .select(*USER_SESSIONS.columns)
    )


def touched_sessions(new_events: DataFrame, current: DataFrame) -> DataFrame:
    """Existing sessions that new events of the same user can extend or join together."""
    bounds = new_events.groupBy("user_id").agg(F.min("event_time").alias("_tmin"), F.max("event_time").alias("_tmax"))
    near = (F.col("session_end") >= F.col("_tmin") - gap()) & (F.col("session_start") <= F.col("_tmax") + gap())
    return current.join(bounds, on="user_id").where(near).select(*USER_SESSIONS.columns)


def recompute_ranges(new_events: DataFrame, touched: DataFrame) -> DataFrame:
    """Per user, the event-time span whose sessions must be recomputed.

    It runs from the earliest touched session (or new event) to the latest one. Its ends are
    session boundaries: no event lies within the gap outside it, or that event's session
    would have been touched too.
    """
    bounds = new_events.groupBy("user_id").agg(F.min("event_time").alias("_tmin"), F.max("event_time").alias("_tmax"))
    spans = touched.groupBy("user_id").agg(F.min("session_start").alias("_smin"), F.max("session_end").alias("_smax"))
    return bounds.join(spans, on="user_id", how="left").select(
        "user_id",
        F.least("_tmin", F.coalesce("_smin", "_tmin")).alias("range_start"),
        F.greatest("_tmax", F.coalesce("_smax", "_tmax")).alias("range_end"),
    )


def events_in_ranges(events: DataFrame, ranges: DataFrame) -> DataFrame:
    inside = F.col("event_time").between(F.col("range_start"), F.col("range_end"))
    return events.join(ranges, on="user_id").where(inside).drop("range_start", "range_end")


def session_changes(recomputed: DataFrame, touched: DataFrame) -> DataFrame:
    """Upserts for the recomputed sessions, deletes for touched ones that no longer exist."""
    key = list(USER_SESSIONS.key)
    gone = touched.join(recomputed.select(*key), on=key, how="left_anti")
    return recomputed.withColumn("_delete", F.lit(False)).unionByName(gone.withColumn("_delete", F.lit(True)))
