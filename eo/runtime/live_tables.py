"""The stream's live tables, for every writer of them: which they are, the app id the stream's
commits carry on them, and claiming them with an epoch (eo/runtime/commits.py `claim`).

The stream claims them as it takes over (streaming/takeover.py). A rebuild into them or a reset
goes through `claim_while_stopped`: refused while a live stream holds the lease, else a new epoch
and the same claims. Here, not in streaming/: stream and batch do not import each other.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import socket
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from eo.core.positions import partial_batch, rebuilt_position
from eo.core.tables import BRONZE, GOLD, NOT_RETAINED, QUARANTINE, REQUIRED_PROPERTY, SILVER, TableDef
from eo.runtime import commits
from eo.runtime.cli import NotReady, Refused
from eo.runtime.config import STREAM_QUERY, Settings
from eo.runtime.environment import environment
from eo.runtime.fencing import HOLD_SECONDS, Fence, HeldBy, holding

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


_STARTED = time.time()  # when this process started: a holder says since when it runs


def holder(role: str = "the stream") -> str:
    """Who holds the lease, as a refusal names it: what it is, this machine and process, and since
    when (the process's start). The form is read back by `gone`."""
    since = dt.datetime.fromtimestamp(_STARTED, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"{role} on {socket.gethostname()} pid {os.getpid()} since {since}"


_HOLDER = re.compile(r" on (?P<host>\S+) pid (?P<pid>\d+)")


def holder_parts(holder_line: str) -> tuple[str | None, int | None]:
    """The machine and process a holder line (`holder`) names, or (None, None)."""
    found = _HOLDER.search(holder_line)
    return (found["host"], int(found["pid"])) if found else (None, None)


# What a holder of the stream's lease is, by the role its record begins with (`holder(role)`):
# the stream (streaming/takeover.py), a reset (ops/reset.py), a rebuild into the live tables
# (batch/rebuild.py `--target main`).
STREAM, RESET, REBUILD = "the stream", "a reset", "rebuilding --target main"
KINDS = {STREAM: "stream", RESET: "reset", REBUILD: "rebuild"}


def holder_kind(held: HeldBy) -> str:
    """What holds the lease: "stream", "reset", "rebuild", or "other" (a holder this release
    does not know: never taken for a stream)."""
    return next((kind for role, kind in KINDS.items() if held.holder.startswith(role)), "other")


def is_stream(held: HeldBy | None) -> bool:
    """The lease is held, by an instance of the stream."""
    return held is not None and holder_kind(held) == "stream"


def wait_for_lapse(settings: Settings, held: HeldBy, seconds: float, poll: float = 2.0) -> HeldBy | None:
    """For a start after a stream instance that no longer answers (a crashed or cancelled driver
    whose hold outlives it until it expires): the lease's live holder once the stream's hold has
    lapsed or `seconds` have passed, whichever is first. None: nothing holds it any more. A holder
    that is not a stream is returned at once: it is never waited out."""
    deadline = time.monotonic() + seconds
    if is_stream(held):
        print(f"[lease] {held} holds the stream's lease: waiting up to {seconds:.0f} s for it to lapse", flush=True)
    while is_stream(held) and time.monotonic() < deadline:
        time.sleep(min(poll, max(0.0, deadline - time.monotonic())))
        held = live_holder(settings)
    return held


def gone(held: HeldBy) -> bool:
    """Whether a recorded holder is known to have died: its process is gone on this machine (a
    SIGKILL leaves its hold until it expires). A holder on another machine is never known gone."""
    found = _HOLDER.search(held.holder) or re.match(r"(?P<host>\S+) pid (?P<pid>\d+)", held.holder)
    if found is None or found["host"] != socket.gethostname():
        return False
    pid = int(found["pid"])
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:  # a zombie child counts as dead
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def live_holder(settings: Settings) -> HeldBy | None:
    """Who holds the stream's lease right now (a stream, a rebuild into the live tables, a reset),
    unless its hold is over or its process is known gone."""
    held = environment(settings).lease().held(QUERY)
    return None if held is None or gone(held) else held


def claim(settings: Settings, app_id: str | None, epoch: int, tables: Sequence[TableDef]) -> None:
    """Every table given claimed with `epoch` (eo/runtime/commits.py `claim`): a commit of an older
    epoch that was not made yet is refused, whatever its app id; from here on no older epoch of
    `app_id` (None: no checkpoint names one) builds a commit to it."""
    found = [environment(settings).table(t.name) for t in tables]
    if not found:
        return
    with ThreadPoolExecutor(len(found)) as pool:  # independent tables: claim them at once
        list(pool.map(lambda table: commits.claim(table, app_id, epoch), found))


def positions(settings: Settings, app_id: str) -> dict[str, int]:
    """The position (batch id + 1; 0: none) `app_id` reached on each live table that exists."""
    from eo.runtime.lake import table_exists

    found = {}
    for table in STREAM_TABLES:
        if table_exists(settings, settings.table_path(table.name)):
            target = environment(settings).table(table.name)
            target.refresh()
            found[table.name] = (target.reached(app_id) or (0, 0))[1]
    return found


def owner(settings: Settings, fence: Fence, whole: bool = True) -> commits.Txn | None:
    """Who writes the live tables after `claim_while_stopped`, or None without a checkpoint: the
    stream's app id, the epoch the fence took, and the position every table is left at.

    `whole` (a rebuild of every live table from bronze): bronze's position, whatever a crash left
    the others at (eo/core/positions.py). Else (a range of gold) the tables must be at one
    position already: NotReady names the partial batch."""
    current = generation(settings)
    if current is None:
        return None
    app_id = app_id_of(current)
    from eo.runtime import lake_tables

    reached = positions(settings, app_id)
    partial = partial_batch(lake_tables.comparable(reached, lake_tables.joined(settings)))
    if partial and not whole:
        raise NotReady(
            f"{partial}: a range cannot be rebuilt into the live tables until every table holds it; "
            "run the stream until caught up (`python -m streaming run --until-caught-up`), or rebuild "
            "every table (`python -m batch.rebuild --target main`, no range)"
        )
    return commits.Txn(app_id, fence.epoch, rebuilt_position(reached))


def claim_while_stopped(settings: Settings, doing: str, hold: bool = False) -> Fence:
    """For a command that writes the stream's live tables (`doing`: what it is about to do).

    Refuses (NotReady) while a live holder has the lease (a stream, another rebuild or reset), in
    every environment: the lease is shared where the instances are (a file here, DynamoDB or
    PostgreSQL across machines). Otherwise takes a new epoch and claims the stream's tables with
    it, as a starting stream does: a zombie stream (paused, its hold expired) can then commit
    nothing more, through the lease or the tables. Tables not there yet have nothing to fence.
    `hold`: the epoch is held in this process's name (renew it: `holding_live_tables`), so that a
    stream or another writer starting meanwhile is refused, naming this one. The tables' own
    properties (an append-only guard a killed rebuild left lifted) are set again."""
    from eo.runtime.lake import table_exists

    lease = environment(settings).lease()
    held = live_holder(settings)
    if held is not None:
        stop = " (make stream-stop)" if is_stream(held) else ""
        raise Refused(f"{held} holds the stream's live tables: stop it{stop} before {doing}, or wait for it to end")
    fence = Fence.start(lease, QUERY, holder(doing) if hold else "", HOLD_SECONDS if hold else 0.0)
    current = generation(settings)
    there = [t for t in STREAM_TABLES if table_exists(settings, settings.table_path(t.name))]
    # Without a checkpoint too: a zombie of a lost one is mid-commit under an app id nothing names.
    claim(settings, app_id_of(current) if current is not None else None, fence.epoch, there)
    restore_properties(settings, there)
    print(f"[lease] {QUERY} epoch {fence.epoch} taken and the stream's tables claimed before {doing}", flush=True)
    return fence


@contextmanager
def holding_live_tables(settings: Settings, doing: str) -> Iterator[Fence]:
    """`claim_while_stopped` with the epoch held by this process while the block runs, and let go
    after it, however it ends."""
    fence = claim_while_stopped(settings, doing, hold=True)
    with holding(fence):
        yield fence


def restore_properties(settings: Settings, tables: Sequence[TableDef]) -> list[str]:
    """Each table's properties set again where they differ from its definition (eo/core/tables.py):
    a rebuild killed while silver's append-only guard was lifted leaves it lifted, until the next
    writer of the live tables comes here. Returns the tables set again, each said in a line."""
    restored = []
    for table in tables:
        target = environment(settings).table(table.name)
        stored = target.refresh().metadata().configuration
        if table.live and NOT_RETAINED in stored:
            raise NotReady(
                f"{table.name} has {NOT_RETAINED}={stored[NOT_RETAINED]}: its transaction ids, by which a replay "
                f"is known, would expire. Remove it (ALTER TABLE delta.`{target.uri}` UNSET TBLPROPERTIES "
                f"('{NOT_RETAINED}')) with the stream stopped, then start again"
            )
        wrong = {key: value for key, value in table.properties.items() if stored.get(key) != value}
        if wrong:
            own = not all(key.startswith("delta.") for key in wrong)  # a platform key (eo.*): not Delta's
            target.current.alter.set_table_properties(wrong, raise_if_not_exists=not own)
            restored.append(table.name)
            recorded = {key: wrong.pop(key) for key in [REQUIRED_PROPERTY] if key in wrong}
            if recorded:
                print(f"[lake] {table.name}: recorded its declaration's required fields {recorded}", flush=True)
            if wrong:
                print(f"[lake] {table.name}: {wrong} set again (a writer stopped midway left it otherwise)", flush=True)
    return restored
