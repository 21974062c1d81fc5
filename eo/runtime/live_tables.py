"""The stream's live tables, for every writer of them: which they are, the app id the stream's
commits carry on them, and claiming them with an epoch (eo/runtime/commits.py `claim`).

The stream claims them as it takes over (streaming/takeover.py). A rebuild into them or a reset
goes through `claim_while_stopped`: refused while a live stream holds the lease, else a new epoch
and the same claims. Here, not in streaming/: stream and batch do not import each other.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from eo.core.tables import BRONZE, GOLD, QUARANTINE, SILVER, TableDef
from eo.runtime import commits
from eo.runtime.cli import NotReady
from eo.runtime.config import STREAM_QUERY, Settings
from eo.runtime.environment import environment
from eo.runtime.fencing import Fence

QUERY = STREAM_QUERY
# The tables the stream writes: streaming/microbatch.py's WRITES (a unit test holds them equal).
STREAM_TABLES: tuple[TableDef, ...] = (BRONZE, QUARANTINE, SILVER, *GOLD)


def metadata_uri(settings: Settings, query: str = QUERY) -> str:
    """The checkpoint's `metadata` file: its stream id names the checkpoint's generation."""
    return f"{settings.checkpoint_path(query)}/metadata"


def read_generation(settings: Settings, uri: str) -> str:
    return json.loads(environment(settings).lake_files.read_text(uri).splitlines()[0])["id"][:8]


def generation(settings: Settings) -> str | None:
    """The stream checkpoint's generation, or None when there is no checkpoint (none is made)."""
    uri = metadata_uri(settings)
    return read_generation(settings, uri) if environment(settings).lake_files.exists(uri) else None


def app_id_of(generation: str) -> str:
    """The app id the stream's commits carry: the job and its checkpoint's generation."""
    return f"{QUERY}-{generation}"


def holder() -> str:
    """Who holds the lease while the stream runs, as a refusal names it: this machine and process."""
    return f"{socket.gethostname()} pid {os.getpid()}"


def claim(settings: Settings, app_id: str, epoch: int, tables: Sequence[TableDef]) -> None:
    """Every table given claimed with `epoch`: from here on no older epoch of the app id commits to it."""
    found = [environment(settings).table(t.name) for t in tables]
    if not found:
        return
    with ThreadPoolExecutor(len(found)) as pool:  # independent tables: claim them at once
        list(pool.map(lambda table: commits.claim(table, app_id, epoch), found))


def owner(settings: Settings, fence: Fence) -> commits.Txn | None:
    """Who writes the live tables after `claim_while_stopped`: the stream's app id with the epoch it
    took (commits.replace_files keeps the position reached), or None without a checkpoint."""
    current = generation(settings)
    return None if current is None else commits.Txn(app_id_of(current), fence.epoch, 0)


def claim_while_stopped(settings: Settings, doing: str) -> Fence:
    """For a command that writes the stream's live tables (`doing`: what it is about to do).

    Refuses (NotReady) while a live stream holds the lease, in every environment: the lease is
    shared where the instances are (a file here, DynamoDB or PostgreSQL across machines).
    Otherwise takes a new epoch and claims the stream's tables with it, as a starting stream does:
    a zombie stream (paused, its hold expired) can then commit nothing more, through the lease or
    the tables. Tables not there yet have nothing to fence."""
    from eo.runtime.lake import table_exists

    lease = environment(settings).lease()
    held = lease.held(QUERY)
    if held is not None:
        raise NotReady(
            f"the stream is running: stop it (make stream-stop) before {doing}; it holds the lease ({held}), "
            "and a stream that died without letting go frees it by then"
        )
    fence = Fence.start(lease, QUERY)
    current = generation(settings)
    if current is not None:
        there = [t for t in STREAM_TABLES if table_exists(settings, settings.table_path(t.name))]
        claim(settings, app_id_of(current), fence.epoch, there)
    print(f"[lease] {QUERY} epoch {fence.epoch} taken and the stream's tables claimed before {doing}", flush=True)
    return fence
