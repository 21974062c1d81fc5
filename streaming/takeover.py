"""Taking over the stream: a new epoch for this instance, every table it writes claimed with it,
and which layer refused a superseded instance's commit (eo/runtime/fencing.py, eo/runtime/commits.py).

The same claim serves the commands that write the stream's tables while it is stopped (a rebuild
into the live tables, a reset): `claim_while_stopped` refuses while a live stream holds the lease,
and otherwise fences any zombie stream before they write.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from eo.core.tables import TableDef
from eo.runtime import commits
from eo.runtime.cli import NotReady
from eo.runtime.config import STREAM_QUERY, Settings
from eo.runtime.environment import environment
from eo.runtime.fencing import HOLD_SECONDS, Fence
from eo.runtime.hooks import hooks
from eo.runtime.lake import ensure_reference, ensure_tables, table_exists
from eo.runtime.sinks import postgres
from streaming import checkpoint
from streaming.microbatch import WRITES

QUERY = STREAM_QUERY


def prepare(spark, settings: Settings) -> None:
    """Tables exist and the reference data is loaded before the query starts."""
    ensure_tables(spark, settings)
    ensure_reference(spark, settings)


def app_id_of(generation: str) -> str:
    """The app id the query's commits carry: the job and its checkpoint's generation (stream id)."""
    return f"{QUERY}-{generation}"


def holder() -> str:
    """Who holds the lease while the stream runs, as a refusal names it: this machine and process."""
    return f"{socket.gethostname()} pid {os.getpid()}"


def claim(settings: Settings, app_id: str, epoch: int, tables: Sequence[TableDef] = WRITES) -> None:
    """Every table given claimed with `epoch` (eo/runtime/commits.py `claim`): from here on no
    older epoch of the app id commits to them."""
    found = [environment(settings).table(t.name) for t in tables]
    if not found:
        return
    with ThreadPoolExecutor(len(found)) as pool:  # independent tables: claim them at once
        list(pool.map(lambda table: commits.claim(table, app_id, epoch), found))


def take_over(settings: Settings, app_id: str) -> tuple[Fence, list[postgres.PostgresSink]]:
    """A new epoch for this instance, held by it (renew it: eo/runtime/fencing.py `Heartbeat`);
    every table the query writes claimed with it.

    From here on an older instance cannot commit (eo/runtime/fencing.py, eo/runtime/commits.py)."""
    dsn = environment(settings).sink_dsn
    if dsn:
        postgres.create_tables(dsn)
    fence = Fence.start(environment(settings).lease(), QUERY, holder(), HOLD_SECONDS)
    claim(settings, app_id, fence.epoch)
    sinks = [postgres.PostgresSink(dsn, fence), *hooks().sinks(dsn, fence)] if dsn else []
    print(
        f"[streaming] {QUERY} epoch {fence.epoch}; PostgreSQL sinks: {', '.join(s.guarantee for s in sinks) or 'none'}",
        flush=True,
    )
    return fence, sinks


def claim_while_stopped(settings: Settings, doing: str) -> Fence:
    """For a command that writes the stream's live tables (`doing`: what it is about to do).

    Refuses (NotReady) while a live stream holds the lease, in every environment: the lease is
    shared where the instances are (a file here, DynamoDB or PostgreSQL across machines).
    Otherwise takes a new epoch and claims the stream's tables with it, as a starting stream does:
    a zombie stream (paused, its hold expired) can then commit nothing more, through the lease or
    the tables. Tables not there yet have nothing to fence."""
    lease = environment(settings).lease()
    held = lease.held(QUERY)
    if held is not None:
        raise NotReady(
            f"the stream is running: stop it (make stream-stop) before {doing}; it holds the lease ({held}), "
            "and a stream that died without letting go frees it by then"
        )
    fence = Fence.start(lease, QUERY)
    generation = checkpoint.stream_id(settings, QUERY)
    if generation is not None:
        written = [t for t in WRITES if table_exists(settings, settings.table_path(t.name))]
        claim(settings, app_id_of(generation), fence.epoch, written)
    print(f"[lease] {QUERY} epoch {fence.epoch} taken and the stream's tables claimed before {doing}", flush=True)
    return fence


# Three layers refuse a stale instance's commit: our epoch checks (Fenced), Spark's checkpoint
# logs (an offset or commit file the newer instance already wrote), delta-rs's conflict checks
# ("Concurrent transaction failed", "a concurrent transaction added new data", ...).
REFUSALS = {
    "fenced": "the epoch lease",
    "concurrent_stream_log_update": "the streaming checkpoint log",
    "concurrent transaction": "Delta's conflict checks",
}


def refused_by(exc: BaseException, fence: Fence) -> str | None:
    """Which layer stopped a superseded instance, or None when the error is this instance's own.

    A paused instance can wake up anywhere in a batch, so the first thing to fail may be none of
    the layers above (a state file, a Kafka read); once the lease shows a newer epoch, the failure
    is the fencing all the same, and no commit of this instance can follow it."""
    text = f"{type(exc).__name__}: {exc}".lower()
    layer = next((layer for marker, layer in REFUSALS.items() if marker in text), None)
    if layer is not None:
        return layer
    try:
        superseded = fence.lease.current(fence.job) != fence.epoch
    except Exception:  # noqa: BLE001 (the lease is unreachable: report the original error)
        return None
    return f"the epoch lease (after {type(exc).__name__})" if superseded else None
