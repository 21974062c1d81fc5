"""How the lake began, recorded in the lake itself (DESIGN invariant 14).

A lake begins from a topic in one of two ways: the first start of the stream on an empty lake
with no checkpoint, or `python -m streaming run --new-lake`, an operator's explicit decision to
begin a new lake (the old one lost, its checkpoint kept aside). Each beginning is one small JSON
file under `<lake root>/_lake_origin/`: when, by whom (the stream's holder line), how, and the
offsets of the topic it began from. `make stream-status` and verify report them; the stream's
start reads them to tell a lake emptied (a beginning recorded, bronze gone) from a new one.
"""

from __future__ import annotations

import datetime as dt
import json

from eo.runtime.config import Settings
from eo.runtime.environment import environment
from eo.runtime.storage import files_under

FIRST_START = "a first start: an empty lake, no checkpoint"
NEW_LAKE = "`python -m streaming run --new-lake`"


def folder(settings: Settings) -> str:
    return f"{settings.source_lake}/_lake_origin"


def record(settings: Settings, how: str, by: str, offsets: dict[int, int], note: str = "") -> dict:
    """Write one beginning of the lake; returns what was written."""
    now = dt.datetime.now(dt.UTC)
    entry = {
        "begun_at": now.isoformat(timespec="seconds"),
        "how": how,
        "by": by,
        "topic": settings.topic,
        "from_offsets": {str(p): int(o) for p, o in sorted(offsets.items())},
        "note": note,
    }
    files = environment(settings).lake_files
    files.write_text(f"{folder(settings)}/{now:%Y%m%dT%H%M%S%fZ}.json", json.dumps(entry, indent=2) + "\n")
    return entry


def begun(settings: Settings) -> list[dict]:
    """Every recorded beginning of the lake, oldest first ([] for a lake older than the record)."""
    files = environment(settings).lake_files
    return [json.loads(files.read_text(uri)) for uri in files_under(files, folder(settings), ".json")]


def described(entry: dict) -> str:
    """One beginning as a line: `begun 2026-12-06T16:00:00+00:00 by <who> (<how>), reading <topic>
    from offsets p0 0, p1 0`."""
    offsets = ", ".join(f"p{p} {o:,}" for p, o in entry["from_offsets"].items()) or "its earliest"
    note = f"; {entry['note']}" if entry.get("note") else ""
    return (
        f"begun {entry['begun_at']} by {entry['by']} ({entry['how']}), reading {entry['topic']} "
        f"from offsets {offsets}{note}"
    )
