"""Deduplication by event id, across all history: the copy with the lowest source coordinates wins.

Producers key messages by event_id, so every copy of an event sits in one Kafka partition and
"lowest (partition, offset)" is also "first seen by the stream". The batch rebuild picks that
copy with `first_copies`; the stream keeps the first copy its engine state sees
(streaming/plan.py), which is the same one.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from eo.core.tables import SILVER, SOURCE_KEY


def first_copies(events: DataFrame) -> DataFrame:
    """One row per silver key: the copy with the lowest (topic, partition, offset)."""
    order = Window.partitionBy(*SILVER.key).orderBy(*SOURCE_KEY)
    return events.withColumn("_copy", F.row_number().over(order)).where(F.col("_copy") == 1).drop("_copy")
