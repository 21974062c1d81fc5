"""Poison records: a micro-batch that fails because of its data is cut down to the records that
make it fail; they are quarantined as `poison:<error class>` and the rest of the batch goes on.

Whose fault an error is gets decided by reproducing it: the batch's pure computation (the same
reading, dedup and gold transforms, nothing written) runs on halves of the batch's offset ranges
until single records fail alone. An error that names the infrastructure (a missing table, the
broker, the disk, fencing), or that no single record reproduces, stops the job as before.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from eo.core.tables import POISON_PREFIX
from eo.core.transforms.parse import raw_text
from eo.runtime.config import Settings
from eo.runtime.environment import environment
from streaming import checkpoint_files

# Errors that are never a record's fault: they stop the job loudly, with no isolation attempt.
INFRASTRUCTURE = (
    "Fenced",
    "ConcurrentTransaction",
    "ConcurrentAppend",
    "ConcurrentDelete",
    "MetadataChanged",
    "ProtocolChanged",
    "CONCURRENT_STREAM_LOG_UPDATE",
    "DELTA_",
    "PATH_NOT_FOUND",
    "TABLE_OR_VIEW_NOT_FOUND",
    "FileNotFound",
    "IOException",
    "No space left",
    "OutOfMemoryError",
    "Kafka",
    "Py4JNetworkError",
    "Connection refused",
    "Broken pipe",
    *checkpoint_files.STATE_FAILURES,  # the checkpoint's engine state, not a record
)


def error_class(exc: BaseException) -> str:
    """Spark's error condition (USER_RAISED_EXCEPTION, ...) or the exception's class name."""
    condition = getattr(exc, "getCondition", lambda: None)()
    return condition or type(exc).__name__


def may_be_data(exc: BaseException) -> bool:
    text = f"{type(exc).__name__}: {exc}"
    return not any(marker in text for marker in INFRASTRUCTURE)


@dataclass(frozen=True, order=True)
class Span:
    """Offsets first..last (inclusive) of one Kafka partition, as far as a batch holds them."""

    topic: str
    partition: int
    first: int
    last: int

    def column(self) -> Column:
        return (
            (F.col("kafka_topic") == self.topic)
            & (F.col("kafka_partition") == self.partition)
            & F.col("kafka_offset").between(self.first, self.last)
        )


def halve(spans: list[Span]) -> tuple[list[Span], list[Span]]:
    """Two halves: of the list when it has several spans, else of the one span's offsets."""
    if len(spans) > 1:
        middle = len(spans) // 2
        return spans[:middle], spans[middle:]
    (s,) = spans
    middle = (s.first + s.last) // 2
    return [Span(s.topic, s.partition, s.first, middle)], [Span(s.topic, s.partition, middle + 1, s.last)]


def bisect(spans: list[Span], fails: Callable[[list[Span]], str | None]) -> list[tuple[Span, str]]:
    """The single records (one-offset spans) that fail alone, each with its error class.

    `fails(spans)` runs the computation on the records in `spans` and returns the error class,
    or None when it passes. Halves that pass are not searched further, so a batch with k poison
    records costs about 2 k log2(offsets) runs.
    """
    error = fails(spans)
    if error is None:
        return []
    if len(spans) == 1 and spans[0].first == spans[0].last:
        return [(spans[0], error)]
    left, right = halve(spans)
    return bisect(left, fails) + bisect(right, fails)


def spans_of(batch: DataFrame) -> list[Span]:
    """The offset ranges a batch covers, one per partition (a few rows to collect)."""
    rows = batch.groupBy("kafka_topic", "kafka_partition").agg(F.min("kafka_offset"), F.max("kafka_offset")).collect()
    return sorted(Span(*row) for row in rows)


def within(batch: DataFrame, spans: list[Span]) -> DataFrame:
    condition = spans[0].column()
    for span in spans[1:]:
        condition = condition | span.column()
    return batch.where(condition)


def find_poison(batch: DataFrame, stages: list[Callable[[DataFrame], None]]) -> list[tuple[Span, str]]:
    """Bisect `batch` with the first of `stages` that fails on the whole batch.

    Stages are the batch's computation cut into cheaper and dearer prefixes, writing nothing:
    most data errors show in reading the records, a one-job stage, so bisection stays cheap.
    """
    spans = spans_of(batch)
    for stage in stages:

        def fails(spans: list[Span], stage=stage) -> str | None:
            try:
                stage(within(batch, spans))
            except Exception as exc:  # the reproduction itself decides: only data errors count
                if not may_be_data(exc):
                    raise
                return error_class(exc)
            return None

        if fails(spans):
            return bisect(spans, fails)
    return []


def texts_of(records: DataFrame, found: list[tuple[Span, str]]) -> dict[tuple[str, int, int], tuple]:
    """The key and raw value (as quarantine shows them) of the records found, by coordinates."""
    if not found:
        return {}
    rows = within(records, [span for span, _ in found]).select(
        "kafka_topic",
        "kafka_partition",
        "kafka_offset",
        F.make_valid_utf8("key").alias("key"),
        raw_text(F.col("value")).alias("raw_value"),
    )
    return {(r.kafka_topic, r.kafka_partition, r.kafka_offset): (r.key, r.raw_value) for r in rows.collect()}


KEEP = 50  # isolations kept in the record, newest last (the poison list itself is never trimmed)


def record_uri(settings: Settings) -> str:
    """Where the stream keeps its poison list and isolations (a few KB of JSON): it reads the list
    when it starts its query, `make stream-status` shows it."""
    return f"{settings.source_reports}/streaming/poison.json"


def read_record(settings: Settings) -> dict:
    uri = record_uri(settings)
    if not environment(settings).report_files.exists(uri):
        return {"records": 0, "poison": [], "isolations": []}
    return json.loads(environment(settings).report_files.read_text(uri))


def recorded(settings: Settings) -> list[tuple]:
    """Every record isolated so far, once each, as the quarantine holds it: (topic, partition,
    offset, reason, key, raw_value) (eo/runtime/reading.py POISON_COLUMNS)."""
    return [tuple(entry) for entry in read_record(settings)["poison"]]


def record_isolation(
    settings: Settings,
    batch_id: int,
    found: list[tuple[Span, str]],
    seconds: float,
    texts: dict[tuple[str, int, int], tuple[str | None, str | None]],
) -> None:
    """Add one isolation to the record (the stream is its only writer). A replayed batch isolates
    the same records again: the poison list holds each once. `texts`: each record's key and
    raw value, by coordinates, which its quarantine row will show."""
    record = read_record(settings)
    poison = {tuple(entry[:3]): entry[3:] for entry in record["poison"]}
    for s, error in found:
        coordinates = (s.topic, s.partition, s.first)
        poison[coordinates] = [f"{POISON_PREFIX}{error}", *texts.get(coordinates, (None, None))]
    record["poison"] = [[*coordinates, *rest] for coordinates, rest in sorted(poison.items())]
    record["records"] = len(poison)
    record["isolations"] = [
        *record["isolations"][-(KEEP - 1) :],
        {
            "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "batch_id": batch_id,
            "seconds": round(seconds, 1),
            "records": [
                {"topic": s.topic, "partition": s.partition, "offset": s.first, "reason": f"{POISON_PREFIX}{error}"}
                for s, error in found
            ],
        },
    ]
    environment(settings).report_files.write_text(record_uri(settings), json.dumps(record, indent=2))
