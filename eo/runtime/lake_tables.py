"""When each live table joined the lake, recorded in the lake itself (docs/extending.md).

A gold table declared after the lake began (eo/core/gold/) is created empty by the stream's next
start, on the same checkpoint: it holds the batches from then on, and a rebuild into main fills
the days before it. Without a record, that table looks like one deleted beside bronze (missing
at the start's check) and then like a lake behind its checkpoint (at no batch while the others
are at batch N), and the start would be refused. So each live table gets one small JSON file
under `<lake root>/_lake_tables/` when a start first finds it: `joined_after`, the checkpoint's
last committed batch when the stream created it (None: there from the lake's beginning, or made
by a rebuild from bronze, so it holds every batch).

- a table missing from a lake that records its tables, and recorded there: deleted, refused;
- missing and never recorded: declared since, created empty by this start (`new_tables`);
- a lake older than the record (no file at all): every missing table counts as deleted, as
  before, and the start records the tables it finds.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping

from eo.runtime.config import Settings
from eo.runtime.environment import environment
from eo.runtime.storage import files_under


def folder(settings: Settings) -> str:
    return f"{settings.source_lake}/_lake_tables"


def joined(settings: Settings) -> dict[str, int | None]:
    """Each recorded table's `joined_after` ({} for a lake older than the record)."""
    files = environment(settings).lake_files
    found = {}
    for uri in files_under(files, folder(settings), ".json"):
        entry = json.loads(files.read_text(uri))
        found[entry["table"]] = entry["joined_after"]
    return found


def new_tables(recorded: Mapping[str, int | None], missing: Iterable[str]) -> list[str]:
    """Of the tables missing from the lake, those declared since its tables were recorded: never
    recorded in a lake that records its tables (none in a lake older than the record)."""
    return [name for name in missing if recorded and name not in recorded]


def record(settings: Settings, found_before: Iterable[str], present: Iterable[str], committed: int | None) -> list[str]:
    """Record each table in `present` that has no record yet: one the start found already there
    (`found_before`) joined with the lake, one it created joined after `committed` (the
    checkpoint's last committed batch). Returns the tables that joined after a batch (none on a
    lake's first start: every table is there from its beginning)."""
    recorded = joined(settings)
    before = set(found_before)
    files = environment(settings).lake_files
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    created = []
    for name in (name for name in present if name not in recorded):
        after = None if name in before else committed
        if after is not None:  # created by this start after a batch: it joins after it
            created.append(name)
        entry = {"table": name, "joined_after": after, "recorded_at": now}
        files.write_text(f"{folder(settings)}/{name}.json", json.dumps(entry, indent=2) + "\n")
    return created


def comparable(reached: Mapping[str, int], recorded: Mapping[str, int | None]) -> dict[str, int]:
    """The positions (batch + 1; 0: none) of the tables expected to hold the newest batch: a table
    that joined after every batch any table reached holds none of them yet, and is no partial
    batch's and no lagging lake's sign."""
    newest = max(reached.values(), default=0) - 1
    return {
        name: at
        for name, at in reached.items()
        if not (at == 0 and recorded.get(name) is not None and recorded[name] >= newest)
    }
