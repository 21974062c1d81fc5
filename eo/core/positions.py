"""Where a crash can leave the stream's live tables: a micro-batch committed to some, not others.

Each table's commits carry the batch's position (batch id + 1, eo/runtime/commits.py); a replay
after a crash skips the tables that reached it. Anything that rewrites the live tables from
bronze (a rebuild into them, a reset) must leave every one at bronze's position: what bronze
holds is what the rebuild counted, so a replay must skip exactly the batches bronze has.
"""

from __future__ import annotations

from collections.abc import Mapping

LOG = "bronze"  # the table every other one is rebuilt from


def partial_batch(positions: Mapping[str, int]) -> str | None:
    """One line naming the batch a crash left partial and where it is missing, or None when every
    table is at one position. `positions`: table -> position reached (0: none yet)."""
    if len(set(positions.values())) <= 1:
        return None
    newest = max(positions.values())
    ahead = [name for name, at in positions.items() if at == newest]
    behind = [
        f"{name} (at batch {at - 1})" if at else f"{name} (no batch yet)"
        for name, at in positions.items()
        if at != newest
    ]
    return f"a crash left batch {newest - 1} partial: committed to {', '.join(ahead)}, not to {', '.join(behind)}"


def rebuilt_position(positions: Mapping[str, int], log: str = LOG) -> int:
    """The position every live table gets from a rebuild of all of them from the log: the log's."""
    return positions.get(log, 0)
