"""Choosing quarantined records (by reason, time window and coordinates) and pairing each with the
exact bytes bronze holds at the same Kafka coordinates."""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Iterator

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from eo.core.tables import QUARANTINE, SOURCE_KEY, TableDef
from eo.runtime import lake
from eo.runtime.cli import NotReady
from eo.runtime.config import Settings
from ops.quarantine.filters import EPOCH, Coordinate, ReasonPattern, coordinate_text, iso_arg


def open_table(spark: SparkSession, settings: Settings, table: TableDef) -> DataFrame:
    from delta.tables import DeltaTable

    path = settings.table_path(table.name)
    if not DeltaTable.isDeltaTable(spark, path):
        raise NotReady(
            f"no {table.name} table at {path} yet: run the stream first "
            "(make stream-start, or python -m streaming run --until-caught-up)"
        )
    return lake.read(spark, settings, table)


def in_time(frame: DataFrame, since: dt.datetime | None, until: dt.datetime | None) -> DataFrame:
    """kafka_timestamp in [since, until), compared as epoch microseconds: no session time zone involved."""
    for bound, keep in ((since, lambda c, b: c >= b), (until, lambda c, b: c < b)):
        if bound is not None:
            micros = (bound - EPOCH) // dt.timedelta(microseconds=1)
            frame = frame.where(keep(F.col("kafka_timestamp"), F.timestamp_micros(F.lit(micros))))
    return frame


def choose(
    quarantine: DataFrame,
    pattern: ReasonPattern | None = None,
    coordinates: list[Coordinate] | None = None,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
) -> DataFrame:
    chosen = in_time(quarantine, since, until)
    if pattern is not None:
        chosen = chosen.where(pattern.column())
    if coordinates:
        wanted = quarantine.sparkSession.createDataFrame(
            coordinates, "kafka_topic STRING, kafka_partition INT, kafka_offset BIGINT"
        )
        chosen = chosen.join(F.broadcast(wanted), list(SOURCE_KEY), "left_semi")
    return chosen


def selection(spark: SparkSession, settings: Settings, args: argparse.Namespace) -> DataFrame:
    """The quarantine rows the command line chose (every command has --reason, --since, --until)."""
    coordinates = getattr(args, "coordinates", None)
    return choose(open_table(spark, settings, QUARANTINE), args.reason, coordinates, args.since, args.until)


def with_bronze(bronze: DataFrame, chosen: DataFrame, args: argparse.Namespace) -> DataFrame:
    """The chosen records in coordinate order (the first --limit), each with bronze's exact bytes.

    Bronze's row carries the same kafka_timestamp, so the time bounds also let Delta skip its files.
    """
    chosen = chosen.select(*SOURCE_KEY, "reason", "event_id").orderBy(*SOURCE_KEY)
    if args.limit:
        chosen = chosen.limit(args.limit)
    raw = in_time(bronze, args.since, args.until).select(
        *SOURCE_KEY, F.col("key").alias("bronze_key"), "value", F.lit(True).alias("in_bronze")
    )
    return chosen.join(raw, list(SOURCE_KEY), "left").orderBy(*SOURCE_KEY)


def records(rows: DataFrame, missing: list[str]) -> Iterator[tuple[str, Row, bytes | None]]:
    """(coordinates, row, exact bronze bytes) per chosen record; those bronze lacks go to `missing`."""
    for row in rows.toLocalIterator():
        where = coordinate_text(row.kafka_topic, row.kafka_partition, row.kafka_offset)
        if not row.in_bronze:
            missing.append(where)
            continue
        yield where, row, None if row.value is None else bytes(row.value)


def describe(args: argparse.Namespace) -> str:
    """The choice in words, for messages such as "no quarantined records match (...)"."""
    parts = [f"reason {args.reason}" if args.reason else ""]
    parts += [f"coordinates {len(args.coordinates)}" if getattr(args, "coordinates", None) else ""]
    parts += [
        f"since {iso_arg(args.since)}" if args.since else "",
        f"until {iso_arg(args.until)}" if args.until else "",
    ]
    return ", ".join(p for p in parts if p) or "no filter"
