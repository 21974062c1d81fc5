"""Taking over the stream: a new epoch for this instance, every table it writes claimed with it,
and which layer refused a superseded instance's commit (eo/runtime/fencing.py, eo/runtime/commits.py)."""

from __future__ import annotations

from eo.core.gold import sessions_table
from eo.runtime.cli import NotReady
from eo.runtime.config import STREAM_QUERY, Settings
from eo.runtime.environment import environment
from eo.runtime.fencing import HOLD_SECONDS, Fence
from eo.runtime.hooks import hooks
from eo.runtime.lake import ensure_reference, ensure_tables, table_exists
from eo.runtime.live_tables import claim, holder, restore_properties
from eo.runtime.sinks import postgres
from streaming.microbatch import WRITES
from streaming.session_merge import check_owner_hash

# The table merged as sessions (eo/core/gold/): None for a source whose gold has none.
SESSIONS = sessions_table().table if sessions_table() else None

QUERY = STREAM_QUERY


def prepare(spark, settings: Settings) -> None:
    """Tables exist and the reference data is loaded before the query starts."""
    check_owner_hash()
    refuse_sessions_without_keys(settings)
    ensure_tables(spark, settings)
    ensure_reference(spark, settings)


def refuse_sessions_without_keys(settings: Settings) -> None:
    """NotReady if the sessions table holds sessions stored before `metric_keys`: the stream counts a
    minute's distinct users against the keys its stored sessions hold, and theirs are not known.
    A reset rebuilds gold from silver, keys included (docs/operations.md)."""
    if SESSIONS is None or not table_exists(settings, settings.table_path(SESSIONS.name)):
        return
    table = environment(settings).table(SESSIONS.name)
    if "metric_keys" in table.schema().names or not table.refresh().file_uris():
        return
    raise NotReady(
        f"{SESSIONS.name} was made by a release before its metric_keys column, which the stream counts "
        "distinct users against: stop the stream and run `python -m ops.reset` (docs/operations.md)"
    )


def take_over(settings: Settings, app_id: str) -> tuple[Fence, list[postgres.PostgresSink]]:
    """A new epoch for this instance, held by it (renew it: eo/runtime/fencing.py `Heartbeat`);
    every table the query writes claimed with it, its properties as its definition sets them.

    From here on an older instance cannot commit (eo/runtime/fencing.py, eo/runtime/commits.py)."""
    dsn = environment(settings).sink_dsn
    if dsn:
        postgres.create_tables(dsn)
    fence = Fence.start(environment(settings).lease(), QUERY, holder(), HOLD_SECONDS)
    claim(settings, app_id, fence.epoch, WRITES)
    restore_properties(settings, WRITES)  # a guard a killed rebuild left lifted
    sinks = [postgres.PostgresSink(dsn, fence), *hooks().sinks(dsn, fence)] if dsn else []
    print(
        f"[streaming] {QUERY} epoch {fence.epoch}; PostgreSQL sinks: {', '.join(s.guarantee for s in sinks) or 'none'}",
        flush=True,
    )
    return fence, sinks


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
