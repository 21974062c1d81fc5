"""A commit beside maintenance (OPTIMIZE, VACUUM): delta-rs refuses a commit built on a version
that maintenance has since replaced files of; the rows are the same, so it is made again on the
new version. A refusal after any other commit (one that may change rows) is raised as it is."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from eo.runtime.commits import Table

T = TypeVar("T")

# Operations that keep a table's rows as they are: files compacted or reordered, files deleted
# that no version still names.
KEEPS_ROWS = ("OPTIMIZE", "VACUUM START", "VACUUM END")


def changed_since(table: Table, version: int) -> list[str]:
    """The operations committed to the table (as last refreshed) after `version` that may have
    changed its rows, as `operation@version`."""
    latest = table.current.version()
    newer = latest - version
    if newer <= 0:
        return []
    # Newest first; delta-rs lists from `latest - newer + 1` on with no upper bound, so commits that
    # landed since the refresh come first: the oldest `newer` entries are versions+1..latest.
    entries = table.current.history(newer)[-newer:]
    if len(entries) < newer:  # a commit without its commit info: nothing says what it did
        return [f"unknown@{version + 1}..{latest}"]
    return [
        f"{entry['operation']}@{latest - index}"
        for index, entry in enumerate(entries)
        if entry["operation"] not in KEEPS_ROWS
    ]


# How many times a commit refused because maintenance committed first is made again.
MAINTENANCE_ATTEMPTS = 5


def beside_maintenance(table: Table, commit: Callable[[], T]) -> T:
    """`commit()` (built on the table as last refreshed), made again on the new version when
    delta-rs refused it because maintenance committed first (OPTIMIZE's compaction removed files
    it read: the rows are the same). A refusal after any other commit is raised as it is."""
    from deltalake.exceptions import CommitFailedError

    for attempt in range(MAINTENANCE_ATTEMPTS):
        version = table.current.version()
        try:
            return commit()
        except CommitFailedError:
            table.refresh()
            if changed_since(table, version) or attempt == MAINTENANCE_ATTEMPTS - 1:
                raise
            print(f"[commit] {table.uri}: maintenance committed first; made again on version {table.current.version()}")
    raise AssertionError("unreachable")
