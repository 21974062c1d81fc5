"""A gold table is a declaration: what it is, how a batch of new events changes it, how it merges.

A declaration (`GoldTable`, one per file in eo/core/gold/, found by eo/core/gold/__init__.py) says:

- `source`: the declared source (eo/core/sources/) whose silver events it is made of: the stream
  of that source maintains it, and only that source's processes see it;
- the table: its name, columns, key, range column (the event-time column a rebuild of an
  interval replaces and verification compares by) and partitioning; it lives at `gold/<name>`;
- `transform`: rows of the table from a set of new, deduplicated silver events (an Arrow table
  of silver's columns). The SAME function runs in the stream's tasks over each micro-batch's new
  events, in the rebuild over all of silver, and in explain over a row's events;
- `merge`: how a batch's rows meet the stored ones, a rule the platform implements:
  `Additive` (counters and sums per key, added exactly) or `Sessions` (a user's events within a
  gap make one session, merged with the stored sessions they reach);
- `domain`: what every row must satisfy beyond its key (verification's domain expectations);
- `explain`: which silver events make a row (explain, verify's diagnosis).

Given those, the platform gives the table the stream (exactly-once commits, fencing, replay
skipping, kill points), the rebuild, verification, explain and maintenance, with no code of its
own. A declaration that lacks any of it is refused when it is loaded (`DeclarationRefused`): one
line naming the table and what is missing.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import pyarrow as pa

from eo import DeclarationError
from eo.core.sources import DECLARED as SOURCES
from eo.core.sources import DEFAULT_SOURCE, UNKNOWN_FIELDS
from eo.core.tables import DELTA_RS_WRITES, SOURCE_COLUMNS, TableDef, _top_level_split

Transform = Callable[[pa.Table], pa.Table]
NUMERIC = ("BIGINT", "INT", "DECIMAL")
NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class DeclarationRefused(DeclarationError):
    """A declaration the platform cannot carry: its text names the table and what is missing."""


@dataclass(frozen=True)
class Additive:
    """Counters and sums per key. A batch's rows (the transform's, added up by key) are added to
    the stored row of their key, a new key inserted: exact for integers and decimals, whatever
    the batches. `values`: the columns added. `distinct_users`: one of them that counts each user
    once per key; the platform counts it against the users' stored sessions (the `Sessions`
    table's), and the transform leaves it 0. At most one table counts distinct users."""

    values: tuple[str, ...]
    distinct_users: str | None = None


@dataclass(frozen=True)
class Sessions:
    """A user's events less than `gap` apart make one session; a batch's sessions are merged with
    the stored sessions they reach (which they replace), by the tasks that own the users
    (streaming/session_merge.py). The transform makes the sessions of a set of events
    (sessionize). At most one table is merged by this rule."""

    gap: dt.timedelta


MergeRule = Additive | Sessions


@dataclass(frozen=True)
class Domain:
    """What every row must satisfy beyond its key (unique, never null: the platform checks it).
    `not_null`: further columns never null; `minimum`: column -> its least value; `in_set`:
    column -> its allowed values; `at_least`: pairs (a, b) with a >= b on every row."""

    not_null: tuple[str, ...] = ()
    minimum: dict[str, int] = field(default_factory=dict)
    in_set: dict[str, tuple[str, ...]] = field(default_factory=dict)
    at_least: tuple[tuple[str, str], ...] = ()

    def columns(self) -> set[str]:
        return {*self.not_null, *self.minimum, *self.in_set, *(c for pair in self.at_least for c in pair)}


@dataclass(frozen=True)
class Explain:
    """Which silver events make a row: those whose `equal` columns hold the row's key values, with
    an event time from the row's range column on, for `window` (a row per window) or up to the
    row's `until` column (a row that spans its own events, such as a session), inclusive."""

    equal: tuple[str, ...]
    window: dt.timedelta | None = None
    until: str | None = None


@dataclass(frozen=True)
class GoldTable:
    """A gold table, declared (see the module). `rebuild`: the batch execution over all of
    silver (a Spark DataFrame in, the table's rows out) when the rule's own would be slower; it
    must apply `transform` (the rule's: the transform per Spark partition, added up by key)."""

    name: str
    columns: str  # the table's DDL: "a STRING, b BIGINT, ..."
    key: tuple[str, ...]
    range_column: str
    partition_by: tuple[str, ...]
    transform: Transform
    merge: MergeRule
    domain: Domain
    explain: Explain
    zorder: tuple[str, ...] = ()  # compaction order: by default the range column
    rebuild: Callable | None = None
    source: str = DEFAULT_SOURCE  # the source whose events make it (eo/core/sources/<source>.schema.json)

    def __post_init__(self) -> None:
        for problem in _problems(self):
            raise DeclarationRefused(f"gold table {self.name!r} refused: {problem}")

    @property
    def path(self) -> str:
        """Where it lives in the lake (and under _rebuild/ for the rebuild)."""
        return f"gold/{self.name}"

    @cached_property
    def table(self) -> TableDef:
        """Its table definition: the same object on every call (`is` tells tables apart)."""
        return TableDef(
            name=self.name,
            ddl=self.columns,
            key=self.key,
            partition_by=self.partition_by,
            range_column=self.range_column,
            zorder=self.zorder or (self.range_column,),
            properties=DELTA_RS_WRITES,
            live=True,
        )


def reach(table: GoldTable) -> tuple[dt.timedelta, dt.timedelta | None]:
    """How far before and after its range column a row's events can be: an additive row's are in
    its window; a session's start a gap after any earlier event and end any time later."""
    if isinstance(table.merge, Sessions):
        return table.merge.gap, None
    return dt.timedelta(0), table.explain.window


def column_types(ddl: str) -> dict[str, str]:
    """Each column of a DDL with its type, upper case ("DECIMAL(18,2)")."""
    found = {}
    for part in _top_level_split(ddl):
        words = part.split(None, 1)
        if len(words) == 2:
            found[words[0]] = words[1].strip().upper()
    return found


def silver_columns(source: str) -> set[str]:
    """The columns of a source's silver (eo/core/tables.py SILVER, for the source a process serves)."""
    ddl = f"{SOURCES[source].silver_ddl}, {SOURCE_COLUMNS}, {UNKNOWN_FIELDS} ARRAY<STRING>"
    return set(column_types(ddl))


def _problems(table: GoldTable) -> list[str]:
    """What the platform needs and the declaration lacks, in the order it is checked."""
    if not isinstance(table.name, str) or not NAME.match(table.name):
        return ["a name of lower-case letters, digits and _ (it names the table's folder)"]
    if table.source not in SOURCES:
        return [f"source {table.source!r} is not declared (eo/core/sources/: {', '.join(SOURCES)})"]
    types = column_types(table.columns) if isinstance(table.columns, str) else {}
    if not types:
        return ["columns: no DDL of its columns ('a STRING, b BIGINT')"]
    if not table.key:
        return ["no key: the columns that identify a row"]
    if missing := [c for c in table.key if c not in types]:
        return [f"key column {missing[0]!r} is not one of its columns"]
    if not table.range_column:
        return ["no range column: the event-time column a rebuild of an interval replaces"]
    if not types.get(table.range_column, "").startswith("TIMESTAMP"):
        return [f"range column {table.range_column!r} is not a TIMESTAMP column"]
    if missing := [c for c in table.partition_by if c not in types]:
        return [f"partition column {missing[0]!r} is not one of its columns"]
    if not callable(table.transform):
        return ["no transform: the function from a batch's new events to its rows"]
    problems = _merge_problems(table, types)
    if not isinstance(table.domain, Domain):
        problems.append("no domain: what every row must satisfy (Domain(...))")
    elif missing := sorted(c for c in table.domain.columns() if c not in types):
        problems.append(f"domain names {missing[0]!r}, not one of its columns")
    return problems + _explain_problems(table, types)


def _merge_problems(table: GoldTable, types: dict[str, str]) -> list[str]:
    rule = table.merge
    if isinstance(rule, Sessions):
        return [] if isinstance(rule.gap, dt.timedelta) and rule.gap > dt.timedelta(0) else ["a session gap > 0"]
    if not isinstance(rule, Additive):
        return ["no merge rule: Additive(values=...) or Sessions(gap=...)"]
    if not rule.values:
        return ["an Additive rule with no values to add"]
    for column in rule.values:
        if column in table.key or not types.get(column, "").startswith(NUMERIC):
            return [f"additive value {column!r} is not a numeric column outside the key"]
    if rule.distinct_users is not None and rule.distinct_users not in rule.values:
        return [f"distinct_users {rule.distinct_users!r} is not one of its additive values"]
    return []


def _explain_problems(table: GoldTable, types: dict[str, str]) -> list[str]:
    spec = table.explain
    if not isinstance(spec, Explain):
        return ["no recomputation for explain: Explain(equal=..., window=... or until=...)"]
    silver = silver_columns(table.source)
    if missing := [c for c in spec.equal if c not in table.key or c not in silver]:
        return [f"explain's column {missing[0]!r} is not both a key column and a silver column"]
    if (spec.window is None) == (spec.until is None):
        return ["explain needs one of window (a row per window of event time) or until (a column)"]
    if isinstance(table.merge, Additive) and spec.window is None:
        return ["an additive table's explain needs its window: the event time one row counts"]
    if spec.until is not None and not types.get(spec.until, "").startswith("TIMESTAMP"):
        return [f"explain's until {spec.until!r} is not a TIMESTAMP column"]
    return []


ARROW_TYPES = {
    "STRING": pa.string(),
    "BIGINT": pa.int64(),
    "INT": pa.int32(),
    "TIMESTAMP": pa.timestamp("us", tz="UTC"),
    "DATE": pa.date32(),
    "ARRAY<STRING>": pa.list_(pa.string()),
}


def arrow_type(kind: str) -> pa.DataType:
    """A DDL type as Arrow holds it (a DECIMAL(p,s) exactly)."""
    if kind.startswith("DECIMAL"):
        precision, scale = (int(n) for n in kind[kind.index("(") + 1 : kind.index(")")].split(","))
        return pa.decimal128(precision, scale)
    return ARROW_TYPES[kind]


def arrow_schema(table: GoldTable) -> pa.Schema:
    return pa.schema([(name, arrow_type(kind)) for name, kind in column_types(table.columns).items()])


def added_up(table: GoldTable, rows: pa.Table) -> pa.Table:
    """An additive table's rows (of disjoint events) -> one row per key: its values summed,
    exactly; a column outside key and values (a partition's date) depends on the key and is kept."""
    schema = arrow_schema(table)
    rows = rows.select(schema.names).cast(schema)
    others = [c for c in schema.names if c not in table.key and c not in table.merge.values]
    sums = rows.group_by(list(table.key)).aggregate(
        [*((c, "sum") for c in table.merge.values), *((c, "min") for c in others)]
    )
    named = {**{c: sums[c] for c in table.key}, **{c: sums[f"{c}_sum"] for c in table.merge.values}}
    named.update({c: sums[f"{c}_min"] for c in others})
    return pa.table({c: named[c].cast(schema.field(c).type) for c in schema.names})


def recomputed(table: GoldTable, events: pa.Table) -> pa.Table:
    """The rows a set of events makes, all of them at once (explain's recomputation): the
    transform, and for an additive table its rows added up, each key's distinct users counted
    once (the platform's count, eo/core/transforms/metrics.py `users_added`)."""
    rows = table.transform(events)
    if isinstance(table.merge, Sessions):
        return rows
    if table.merge.distinct_users:
        from eo.core.transforms.metrics import user_tuples, users_added

        schema = arrow_schema(table)
        counted = users_added(user_tuples(events))
        rows = pa.concat_tables([part.select(schema.names).cast(schema) for part in (rows, counted)])
    return added_up(table, rows)
