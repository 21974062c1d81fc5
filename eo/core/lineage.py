"""Explain a row: which events make it, recomputed with the transforms the stream and the batch use.

Pure: the reads are eo/runtime/lineage.py's, the command is batch/explain.py. A gold row is
recomputed from exactly the silver events of its key (`event_range`, from its declaration's
`Explain`), by its declaration's transform and merge rule (eo/core/declaration.py `recomputed`),
and compared column by column with the row as stored. Every declared gold table is explainable.
"""

from __future__ import annotations

import datetime as dt
import decimal
from dataclasses import dataclass

import pyarrow as pa

from eo.core.declaration import GoldTable, recomputed
from eo.core.gold import DECLARED
from eo.core.tables import EVENT_ID, EVENT_TIME, SILVER, TableDef

TIME = pa.timestamp("us", tz="UTC")
EXPLAINED = {**{t.name: t.table for t in DECLARED.values()}, SILVER.name: SILVER}


class ExplainError(ValueError):
    """The table, the key or the version asked for does not exist: the person's to fix."""


def _column_types(table: TableDef) -> dict[str, str]:
    return {part.split()[0]: part.split()[1].upper() for part in table.ddl.split(", ") if part.strip()}


def _value(text: str, kind: str, column: str) -> object:
    try:
        if kind.startswith("TIMESTAMP"):
            value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
            return value.replace(tzinfo=value.tzinfo or dt.UTC).astimezone(dt.UTC)
        if kind.startswith("DATE"):
            return dt.date.fromisoformat(text)
        if kind.startswith("BIGINT") or kind.startswith("INT"):
            return int(text)
        if kind.startswith("DECIMAL"):
            return decimal.Decimal(text)
    except (ValueError, decimal.InvalidOperation) as exc:
        raise ExplainError(f"{column}={text!r} is not a {kind.lower()}") from exc
    return text


def parse_key(table_name: str, pairs: list[str]) -> tuple[TableDef, dict[str, object]]:
    """`col=value` pairs as the table's typed key; every key column, and nothing else, must be given."""
    if table_name not in EXPLAINED:
        raise ExplainError(f"unknown table {table_name!r}; explainable: {', '.join(EXPLAINED)}")
    table = EXPLAINED[table_name]
    types = _column_types(table)
    key: dict[str, object] = {}
    for pair in pairs:
        column, sep, text = pair.partition("=")
        if not sep or not column:
            raise ExplainError(f"--key wants col=value, got {pair!r}")
        if column not in table.key:
            raise ExplainError(f"{column!r} is not a key column of {table.name}; its key is {', '.join(table.key)}")
        key[column] = _value(text, types[column], column)
    missing = [c for c in table.key if c not in key]
    if missing:
        raise ExplainError(f"{table.name} needs every key column: missing {', '.join(missing)}")
    return table, key


@dataclass(frozen=True)
class EventRange:
    """Where a row's events can be: silver partitions (event dates) and a filter on silver's columns."""

    dates: tuple[dt.date, ...]
    equal: dict[str, object]
    since: dt.datetime
    until: dt.datetime  # inclusive


def _days(since: dt.datetime, until: dt.datetime) -> tuple[dt.date, ...]:
    days, day = [], since.date()
    while day <= until.date():
        days.append(day)
        day += dt.timedelta(days=1)
    return tuple(days)


def declared(table: TableDef) -> GoldTable | None:
    """The declaration of a gold table; None for silver."""
    return DECLARED.get(table.name)


def event_range(table: TableDef, key: dict[str, object], row: dict | None) -> EventRange:
    """The silver events a row of `table` is made of: for a gold row, the events its declaration's
    `Explain` names (a window's events of the key's values, or those up to the row's `until`
    column, such as a session's end); for silver, one event."""
    if (gold := declared(table)) is not None:
        spec, start = gold.explain, key[table.range_column]
        if spec.window is not None:
            until = start + spec.window - dt.timedelta(microseconds=1)
        else:
            until = row[spec.until] if row else start
        return EventRange(_days(start, until), {c: key[c] for c in spec.equal}, start, until)
    never = dt.datetime.min.replace(tzinfo=dt.UTC)
    if row is None:  # no such event: nothing to read
        return EventRange((), {EVENT_ID: key[EVENT_ID]}, never, never)
    return EventRange((row["event_date"],), {EVENT_ID: key[EVENT_ID]}, row[EVENT_TIME], row[EVENT_TIME])


def recompute(table: TableDef, key: dict[str, object], events: pa.Table) -> dict | None:
    """The row `events` make, by the transforms stream and batch share; None when they make none."""
    if table is SILVER:
        return events.to_pylist()[0] if events.num_rows == 1 else None
    if events.num_rows == 0:
        return None
    for row in recomputed(DECLARED[table.name], events).to_pylist():
        if all(_same(row[c], v) for c, v in key.items()):
            return row
    return None


def _same(a: object, b: object) -> bool:
    if isinstance(a, dt.datetime) and isinstance(b, dt.datetime):
        return a.astimezone(dt.UTC) == b.astimezone(dt.UTC)
    return a == b


def differing(stored: dict | None, recomputed: dict | None, columns: list[str]) -> list[str]:
    """The columns where the stored row and its recomputation differ (all of them when one is missing)."""
    if stored is None or recomputed is None:
        return [] if stored is recomputed else list(columns)
    return [c for c in columns if not _same(stored.get(c), recomputed.get(c))]


# The first-copy rule (eo/core/transforms/dedup.py `first_copy_order`), as explain states it and
# applies it to the copies of one event.
FIRST_COPY_RULE = (
    "of the copies of an event, the one bronze ingested first is kept: the lowest (ingest batch, topic, "
    "partition, offset), a copy ingested before bronze recorded its batch first of all"
)
RULE_PARTS = ("ingest batch", "topic", "partition", "offset")


def first_copy_key(copy: dict) -> tuple:
    """A copy's place in the first-copy order: `copy` has `ingest_batch` ({"version": ...} or None)
    and `coordinates` (topic, partition, offset). A null ingest batch sorts first, as in Spark."""
    batch = copy.get("ingest_batch")
    at = copy["coordinates"]
    version = (0, 0) if batch is None else (1, batch["version"])
    return (version, at["topic"], at["partition"], at["offset"])


def why_first(winner: dict, other: dict) -> str:
    """Why `winner` comes before `other` by the rule: the first part of the order that tells them
    apart, after the parts they share ("same ingest batch e1 b1 and topic t, then partition 0 < 3")."""
    same = []
    for part, mine, theirs in zip(RULE_PARTS, first_copy_key(winner), first_copy_key(other), strict=True):
        if part == "ingest batch":
            shown = (batch_name(winner.get("ingest_batch")), batch_name(other.get("ingest_batch")))
        else:
            shown = (mine, theirs)
        if mine != theirs:
            told = f"{part} {shown[0]} {'<' if mine < theirs else '>'} {shown[1]}"
            if not same:
                return told
            shared = same[0] if len(same) == 1 else f"{', '.join(same[:-1])} and {same[-1]}"
            return f"same {shared}, then {told}"
        same.append(f"{part} {shown[0]}")
    return "the same coordinates"


def batch_name(batch: dict | None) -> str:
    """An ingest batch for people: "e1 b3" (epoch 1, position 3), as the history names batches."""
    return "(before batches were recorded)" if batch is None else f"e{batch['epoch']} b{batch['position']}"


def lateness_seconds(event_time: dt.datetime | None, kafka_timestamp: dt.datetime | None) -> float | None:
    """How long after its event time a record reached Kafka (negative: its clock ran ahead)."""
    if event_time is None or kafka_timestamp is None:
        return None
    return (kafka_timestamp.astimezone(dt.UTC) - event_time.astimezone(dt.UTC)).total_seconds()
