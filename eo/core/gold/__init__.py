"""The registry of gold tables: every module of this package declares one (`TABLE`, a GoldTable).

Adding a gold table is adding a module here (docs/extending.md); nothing else names it. The
stream, the rebuild, verification, explain, maintenance, the DAGs and the fault lab iterate
`DECLARED` (through eo/core/tables.py's GOLD, ALL and LIVE for what only needs the tables):
the tables of the source this process serves (EO_SOURCE); `EVERY` holds every source's.
Loading refuses, in one line naming the table and what is wrong, a module without a declaration
and a set of declarations the platform cannot carry together (eo/core/declaration.py for each
one's own).
"""

from __future__ import annotations

import importlib
import pkgutil

from eo.core.declaration import Additive, DeclarationRefused, GoldTable, Sessions
from eo.core.sources import DECLARED as SOURCES
from eo.core.tables import BASE, SOURCE


def discovered(paths, package: str) -> dict[str, GoldTable]:
    """The declarations of the modules of `package` (at `paths`), by module name."""
    found: dict[str, GoldTable] = {}
    for module in sorted(m.name for m in pkgutil.iter_modules(paths) if not m.name.startswith("_")):
        declared = getattr(importlib.import_module(f"{package}.{module}"), "TABLE", None)
        if not isinstance(declared, GoldTable):
            raise DeclarationRefused(f"gold table {module!r} refused: {module}.py declares no TABLE = GoldTable(...)")
        if declared.name != module:
            raise DeclarationRefused(
                f"gold table {declared.name!r} refused: declared in {module}.py, not {declared.name}.py"
            )
        found[declared.name] = declared
    for source in SOURCES:
        checked({name: t for name, t in found.items() if t.source == source})
    return found


def checked(tables: dict[str, GoldTable]) -> dict[str, GoldTable]:
    """`tables` (one source's) if the platform can carry them together, else DeclarationRefused."""
    for name in tables:
        if name in BASE:
            raise DeclarationRefused(f"gold table {name!r} refused: the name of a platform table")
    sessions = [t.name for t in tables.values() if isinstance(t.merge, Sessions)]
    counting = [t.name for t in tables.values() if isinstance(t.merge, Additive) and t.merge.distinct_users]
    if len(sessions) > 1:
        raise DeclarationRefused(f"gold table {sessions[1]!r} refused: {sessions[0]} is merged as sessions already")
    if len(counting) > 1:
        raise DeclarationRefused(f"gold table {counting[1]!r} refused: {counting[0]} counts distinct users already")
    if counting and not sessions:
        raise DeclarationRefused(
            f"gold table {counting[0]!r} refused: distinct users are counted against a Sessions table; none is declared"
        )
    return tables


EVERY: dict[str, GoldTable] = discovered(__path__, __name__)
# The tables of the source this process serves: its stream, rebuild and verification carry these.
DECLARED: dict[str, GoldTable] = {name: t for name, t in EVERY.items() if t.source == SOURCE.name}


def sessions_table() -> GoldTable | None:
    """The table merged by the Sessions rule, if one is declared."""
    return next((t for t in DECLARED.values() if isinstance(t.merge, Sessions)), None)


def counting_table() -> GoldTable | None:
    """The additive table whose distinct users the sessions' owners count, if one is declared."""
    return next((t for t in DECLARED.values() if isinstance(t.merge, Additive) and t.merge.distinct_users), None)


def summed_tables() -> list[GoldTable]:
    """The additive tables without distinct users: the tasks' sums, added up by the driver."""
    return [t for t in DECLARED.values() if isinstance(t.merge, Additive) and not t.merge.distinct_users]
