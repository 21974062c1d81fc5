"""What a replayed micro-batch is already committed to, told by the driver to its tasks.

A kill between a batch's commits leaves some tables committed and others not; on restart the
batch runs again. The driver finds which tables its position already reached and sets them as the
job's local property `COMMITTED` before the batch's job; the tasks write no file for those (no
commit would name it, and VACUUM would keep it a week)."""

from __future__ import annotations

COMMITTED = "eo.committed_tables"  # the job's local property: comma-separated table names


def committed_tables(context) -> frozenset[str]:
    """The tables this task's batch is already committed to: none outside a replay."""
    names = context.getLocalProperty(COMMITTED) if context is not None else None
    return frozenset(names.split(",")) if names else frozenset()
