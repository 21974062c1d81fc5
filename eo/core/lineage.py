"""Explain a row: which events make it, recomputed with the transforms the stream and the batch use.

Pure: the reads are eo/runtime/lineage.py's, the command is batch/explain.py. A gold row is
recomputed from exactly the silver events of its key (`events_filter`), by `minute_metrics` or
`sessionize`, and compared column by column with the row as stored.
"""

from __future__ import annotations

import datetime as dt
import decimal
from dataclasses import dataclass

import pyarrow as pa

from eo.core.tables import CAMPAIGN_MINUTE_METRICS, SILVER, USER_SESSIONS, TableDef
from eo.core.transforms.metrics import minute_metrics, user_tuples
from eo.core.transforms.sessions import as_intervals, sessionize

TIME = pa.timestamp("us", tz="UTC")
EXPLAINED = {t.name: t for t in (CAMPAIGN_MINUTE_METRICS, USER_SESSIONS, SILVER)}


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


def event_range(table: TableDef, key: dict[str, object], row: dict | None) -> EventRange:
    """The silver events a row of `table` is made of: a minute's events of one campaign and type,
    a session's events of one user between its start and end, or one event."""
    if table is CAMPAIGN_MINUTE_METRICS:
        start = key["window_start"]
        until = start + dt.timedelta(minutes=1) - dt.timedelta(microseconds=1)
        equal = {"campaign_id": key["campaign_id"], "event_type": key["event_type"]}
        return EventRange(_days(start, until), equal, start, until)
    if table is USER_SESSIONS:
        start = key["session_start"]
        end = row["session_end"] if row else start
        return EventRange(_days(start, end), {"user_id": key["user_id"]}, start, end)
    never = dt.datetime.min.replace(tzinfo=dt.UTC)
    if row is None:  # no such event: nothing to read
        return EventRange((), {"event_id": key["event_id"]}, never, never)
    return EventRange((row["event_date"],), {"event_id": key["event_id"]}, row["event_time"], row["event_time"])


def recompute(table: TableDef, key: dict[str, object], events: pa.Table) -> dict | None:
    """The row `events` make, by the transforms stream and batch share; None when they make none."""
    if table is SILVER:
        return events.to_pylist()[0] if events.num_rows == 1 else None
    if events.num_rows == 0:
        return None
    if table is CAMPAIGN_MINUTE_METRICS:
        rows = minute_metrics(events, user_tuples(events))
    else:
        rows = sessionize(as_intervals(events))
    for row in rows.to_pylist():
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
