"""The registry of sources: each `<name>.schema.json` here declares one (docs/sources.md).

A declaration is a JSON Schema (draft 2020-12) of the records' top-level object, in the subset the
strict reading knows, with these extensions: `x-topic` (the Kafka topic its records arrive on),
`x-event-id` (the field an event is known by: silver's key), `x-event-time` (the field its time
is read from, within [domains]), `x-catalogue` (optional: the fields checked against the
platform's reference tables, {"campaign": f, "ad": g}: f a known campaign, g one of its ads) and,
on a field, `x-present-when` (required when another field
has a value, absent otherwise) and `x-sql-type` (a decimal's precision and scale).
`additionalProperties` says what a record with a key the declaration lacks becomes: true keeps it
and counts the key (silver's `unknown_fields`), false quarantines it (`unknown_field:<key>`).

The declarations are also the list of sources: Terraform grants each declared topic
(terraform/platform/main.tf reads this folder), and the environment's topic is the declared one
unless a deployment overrides it (EO_TOPIC, as the demo and the tests do).

The same text drives both sides: the JVM reads it for the strict reading (jvm/reader
SourceSchema, given the text by eo/core/transforms/parse.py), and this module reads it for
silver's columns and the reading's type. Both refuse what they do not know, in one line naming the
source and the keyword; a test holds their readings equal. No Spark here: Airflow's tasks read it.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import cached_property
from importlib import resources

from eo import DeclarationError

SUFFIX = ".schema.json"
ID_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$"  # the JVM checks it without a regex (Ids)
TOP_KEYS = {
    "$schema", "$id", "title", "description", "type", "x-topic", "x-event-id", "x-event-time",
    "x-catalogue", "additionalProperties", "required", "properties",
}  # fmt: skip
FIELD_KEYS = {"description", "type", "format", "pattern", "enum", "minimum", "x-sql-type", "x-present-when"}
DECIMAL = re.compile(r"DECIMAL\((\d+),\s*(\d+)\)")
NAME = re.compile(r"^[a-z][a-z0-9_]*$")
TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")
# Columns every source's silver has beside its fields (a declaration may not name them).
UNKNOWN_FIELDS = "unknown_fields"
DERIVED = ("event_date", UNKNOWN_FIELDS, "reason")


class SourceRefused(DeclarationError):
    """A declaration the platform cannot read: its text names the source and what is wrong."""


@dataclass(frozen=True)
class SourceField:
    """One declared field: its name, its column type (Spark SQL), whether every record has it, and
    its domain (a pattern, allowed values, a least value, a field whose value makes it present)."""

    name: str
    sql_type: str
    required: bool
    pattern: str | None = None
    allowed: tuple[str, ...] | None = None
    minimum: float | int | None = None
    present_when: tuple[str, str] | None = None

    @property
    def ddl(self) -> str:
        return f"{self.name} {self.sql_type}"


@dataclass(frozen=True)
class Source:
    """A source's declaration, read: `text` is the file as the JVM reads it too."""

    name: str
    text: str
    topic: str
    fields: tuple[SourceField, ...]
    event_id: str
    event_time: str
    keeps_unknown: bool
    # (campaign field, ad field) checked against the reference tables, or None (no such check).
    catalogue: tuple[str, str] | None = None

    @cached_property
    def by_name(self) -> dict[str, SourceField]:
        return {f.name: f for f in self.fields}

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields if f.required)

    @property
    def reading_ddl(self) -> str:
        """The type the JVM's reading returns (jvm/reader SourceSchema.readingDdl, held equal by a test)."""
        fields = ", ".join(f"{f.name}: {f.sql_type.lower()}" for f in self.fields)
        return f"struct<{fields}, reason: string, {UNKNOWN_FIELDS}: array<string>>"

    @property
    def silver_ddl(self) -> str:
        """Silver's event columns: the fields in order, the event date after the event time, and the
        keys the declaration lacked (null when none)."""
        parts = []
        for f in self.fields:
            parts.append(f.ddl)
            if f.name == self.event_time:
                parts.append("event_date DATE")
        return ", ".join(parts)


def _refused(source: str, what: str) -> SourceRefused:
    return SourceRefused(f"source {source} refused: {what} (docs/sources.md)")


def _field(source: str, name: str, spec: dict, required: bool, names: list[str]) -> SourceField:
    if not NAME.match(name) or name in DERIVED:
        raise _refused(source, f"field {name!r} is not a column name of its own ([a-z][a-z0-9_]*, not {DERIVED})")
    unknown = sorted(set(spec) - FIELD_KEYS)
    if unknown:
        raise _refused(source, f"field {name} has keyword {unknown[0]}, which the reading does not know")
    types = set(spec.get("type")) if isinstance(spec.get("type"), list) else {spec.get("type")}
    decimal = DECIMAL.fullmatch(str(spec.get("x-sql-type", "")).upper())
    if types == {"string", "number"} and decimal:
        sql_type = f"DECIMAL({decimal[1]},{decimal[2]})"
    elif types == {"string"} and spec.get("format") == "date-time":
        sql_type = "TIMESTAMP"
    elif types == {"string"} and "format" not in spec:
        sql_type = "STRING"
    elif types == {"integer"}:
        sql_type = "BIGINT"
    else:
        raise _refused(source, f"field {name} has a type the reading does not know")
    if "x-sql-type" in spec and not sql_type.startswith("DECIMAL"):
        raise _refused(source, f"field {name}: x-sql-type names a decimal's DECIMAL(p,s) only")
    if "minimum" in spec and sql_type != "BIGINT" and not sql_type.startswith("DECIMAL"):
        raise _refused(source, f"field {name}: minimum applies to a decimal or an integer only")
    if ("pattern" in spec or "enum" in spec) and sql_type != "STRING":
        raise _refused(source, f"field {name}: pattern and enum apply to a string only")
    present_when = None
    if "x-present-when" in spec:
        condition = spec["x-present-when"]
        if not isinstance(condition, dict) or len(condition) != 1 or next(iter(condition)) not in names:
            raise _refused(source, f"field {name}: x-present-when names one declared field and its value")
        present_when = next(iter(condition.items()))
    return SourceField(
        name=name,
        sql_type=sql_type,
        required=required,
        pattern=spec.get("pattern"),
        allowed=tuple(spec["enum"]) if "enum" in spec else None,
        minimum=spec.get("minimum"),
        present_when=present_when,
    )


def _catalogue(source: str, spec: object, names: list[str]) -> tuple[str, str] | None:
    if spec is None:
        return None
    if not isinstance(spec, dict) or set(spec) != {"campaign", "ad"} or not set(spec.values()) <= set(names):
        raise _refused(source, 'x-catalogue names {"campaign": <field>, "ad": <field>}, both declared')
    return spec["campaign"], spec["ad"]


def parse(text: str, expected_name: str | None = None) -> Source:
    """A declaration's text, read; SourceRefused naming what it cannot read."""
    try:
        root = json.loads(text)
    except json.JSONDecodeError as error:
        raise _refused(expected_name or "?", f"not JSON ({error})") from None
    name = str(root.get("title", ""))
    if expected_name is not None and name != expected_name:
        raise _refused(expected_name, f"its title is {name!r}, not the file's name {expected_name!r}")
    unknown = sorted(set(root) - TOP_KEYS)
    if unknown:
        raise _refused(name, f"the declaration has keyword {unknown[0]}, which the reading does not know")
    if root.get("type") != "object":
        raise _refused(name, '"type" must be "object"')
    if not TOPIC.fullmatch(str(root.get("x-topic", ""))):
        raise _refused(name, f"x-topic must be one Kafka topic name ({TOPIC.pattern})")
    properties = root.get("properties") or {}
    names = list(properties)
    required = set(root.get("required", []))
    missing = sorted(required - set(names))
    if missing:
        raise _refused(name, f"required field {missing[0]} is not among the properties")
    fields = tuple(_field(name, f, properties[f], f in required, names) for f in names)
    source = Source(
        name=name,
        text=text,
        topic=str(root.get("x-topic", "")),
        fields=fields,
        event_id=root.get("x-event-id", ""),
        event_time=root.get("x-event-time", ""),
        keeps_unknown=root.get("additionalProperties", True) is not False,
        catalogue=_catalogue(name, root.get("x-catalogue"), names),
    )
    for role, field, sql_type, what in (
        ("x-event-id", source.event_id, "STRING", "string"),
        ("x-event-time", source.event_time, "TIMESTAMP", "date-time"),
    ):
        found = source.by_name.get(field)
        if found is None or not found.required or found.sql_type != sql_type:
            raise _refused(name, f"{role} must name a required {what} field")
    return source


def unknown_field_lines(counts: dict[str, dict[str, int]], source: str | None = None) -> list[str]:
    """One line per unknown key (eo/runtime/unknown_fields.py `counted`), for a person: the key,
    how many records carried it, kept and quarantined, and what to do. `source`: by default the
    one this process serves."""
    source = source or SELECTED.name
    return [
        f"unknown field {name!r} in {fates['kept'] + fates['quarantined']:,} {source} records "
        f"({fates['kept']:,} kept, {fates['quarantined']:,} quarantined): declare it in "
        f"eo/core/sources/{source}.schema.json to read it (docs/sources.md)"
        for name, fates in counts.items()
    ]


def discovered(package: str = __name__) -> dict[str, Source]:
    """Every declaration of `package`, by name (read from the package, so from a job's zip too)."""
    found = {}
    for entry in sorted(resources.files(package).iterdir(), key=lambda e: e.name):
        if entry.name.endswith(SUFFIX):
            name = entry.name[: -len(SUFFIX)]
            found[name] = parse(entry.read_text(encoding="utf-8"), name)
    return found


DECLARED: dict[str, Source] = discovered()
CLICKS = DECLARED["clicks"]

# The source this process serves: every command serves one (its tables, its stream, its gold),
# chosen once, before anything reads a table definition, as EO_ENV chooses the environment.
SOURCE_VARIABLE = "EO_SOURCE"
DEFAULT_SOURCE = CLICKS.name


def selected_name() -> str:
    """EO_SOURCE, else the clickstream; SourceRefused when no declaration has that name."""
    name = os.environ.get(SOURCE_VARIABLE, "") or DEFAULT_SOURCE
    if name not in DECLARED:
        raise SourceRefused(
            f"{SOURCE_VARIABLE}={name}: no such source; declared: {', '.join(DECLARED)} (eo/core/sources/*.schema.json)"
        )
    return name


SELECTED: Source = DECLARED[selected_name()]
