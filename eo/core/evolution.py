"""How a declared table's stored schema may follow its declaration (docs/sources.md, "Evolution").

The compatibility a schema registry calls BACKWARD, applied to what is stored: rows already
written must still be rows of the new declaration.
- a new optional field is added to the table, nullable: older rows read it as null;
- a field whose type changed, a new required field, a field made required, and a stored column
  the declaration dropped are refused, each in one line naming the table, the field and what to do.
No Spark here: the stream's start asks it with the stored schema (eo/runtime/lake.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

# Delta's JSON names of the types whose Spark SQL names differ.
_DELTA_NAMES = {"long": "bigint", "integer": "int", "short": "smallint", "byte": "tinyint"}
# A new table: bronze holds every record, so a reset rebuilds a table at a new path from it, by the
# new declaration, while the old table stays as it was.
NEW_TABLE = (
    "give {table} a new path ([tables] in conf/platform.toml) and run python -m ops.reset with the stream "
    "stopped: it rebuilds {table} there from bronze by the new declaration"
)


class SchemaRefused(ValueError):
    """The declaration changed in a way the stored rows cannot follow: the text says what to do."""


def delta_type(kind: str | dict) -> str:
    """A column type as Delta's log writes it ("long", {"type": "array", ...}), in Spark SQL's
    lower-case form ("bigint", "array<string>")."""
    if isinstance(kind, dict):
        if kind.get("type") == "array":
            return f"array<{delta_type(kind['elementType'])}>"
        if kind.get("type") == "map":
            return f"map<{delta_type(kind['keyType'])},{delta_type(kind['valueType'])}>"
        return "struct"  # compared whole below: never equal to a declared scalar
    return _DELTA_NAMES.get(kind, kind).replace(", ", ",")


def _normal(kind: str) -> str:
    return kind.lower().replace(" ", "")


def new_columns(
    table: str,
    declared: Sequence[tuple[str, str]],
    stored: Sequence[tuple[str, str]],
    required: Iterable[str] = (),
    required_before: Iterable[str] | None = None,
) -> list[str]:
    """The declared columns the stored table lacks, to add nullable; SchemaRefused for any change
    stored rows cannot follow. Types as Spark SQL writes them (`delta_type` for the stored ones).
    `required`: the fields the declaration requires now; `required_before`: those it required
    when the table was last started (None: not recorded, a lake made before it was)."""
    what_to_do = NEW_TABLE.format(table=table)
    have = {name: _normal(kind) for name, kind in stored}
    want = {name: _normal(kind) for name, kind in declared}
    for name, kind in declared:
        if name in have and have[name] != want[name]:
            raise SchemaRefused(
                f"{table}: field {name} is declared {kind.upper()} but stored as {have[name].upper()}; a type "
                f"never changes in place: declare a new field and keep this one, or {what_to_do} (docs/sources.md)"
            )
    dropped = [name for name in have if name not in want]
    if dropped:
        raise SchemaRefused(
            f"{table}: column {dropped[0]} is stored but no longer declared; keep it declared (optional), "
            f"or {what_to_do} (docs/sources.md)"
        )
    added = [name for name, _ in declared if name not in have]
    for name in required:
        if name in added:
            raise SchemaRefused(
                f"{table}: required field {name} is new, and the rows already stored lack it; declare it "
                f'optional (leave it out of "required"), or {what_to_do} (docs/sources.md)'
            )
        if required_before is not None and name not in set(required_before):
            raise SchemaRefused(
                f"{table}: field {name} is now required, and rows already stored may lack it; leave it "
                f"optional, or {what_to_do} (docs/sources.md)"
            )
    return added
