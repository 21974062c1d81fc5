"""The lake as `make stream-status` and verify report it, without Spark: where each live table is
against the stream's checkpoint, a partial batch named, and how the lake began.

A micro-batch commits to each live table in its own Delta transaction (bronze, quarantine and
silver at once, then each declared gold table). A failure between them (a
kill, a full disk) leaves the batch in some tables and not in others: a reader sees it there, and
not in the rest, until the stream's next start completes it (its replay commits the batch to the
tables that lack it, and skips the others). This names that batch and the tables behind it.
"""

from __future__ import annotations

from eo.core.positions import partial_batch
from eo.runtime import lake_origin, lake_tables
from eo.runtime.config import STREAM_QUERY, Settings
from eo.runtime.environment import environment
from eo.runtime.live_tables import app_id_of, generation, positions
from eo.runtime.monitoring import last_committed_batch


def lake_report(settings: Settings) -> dict:
    """{generation, positions, committed, partial, tables_line, begun, begun_lines}."""
    current = generation(settings)
    reached = (
        lake_tables.comparable(positions(settings, app_id_of(current)), lake_tables.joined(settings)) if current else {}
    )
    committed = last_committed_batch(settings.checkpoint_path(STREAM_QUERY), environment(settings).lake_files)
    partial = partial_batch(reached)
    if partial:
        newest = max(reached.values()) - 1
        line = (
            f"{partial}. Readers see batch {newest} in the first and not in the others until the stream's "
            "next start completes it (make stream-start, or `python -m streaming run --until-caught-up`)"
        )
    elif not reached:
        line = "no live table yet" if current else "no checkpoint yet: the stream has not started on this lake"
    else:
        at = next(iter(reached.values()))
        line = f"every live table at batch {at - 1}" if at else "every live table made, no batch of this checkpoint yet"
        line += f" (the checkpoint's last committed batch: {committed})" if committed is not None else ""
    begun = lake_origin.begun(settings)
    return {
        "generation": current,
        "positions": reached,
        "checkpoint_committed": committed,
        "partial": partial,
        "tables_line": line,
        "begun": begun,
        "begun_lines": [lake_origin.described(entry) for entry in begun]
        or ["not recorded (a lake older than the record)"],
    }
