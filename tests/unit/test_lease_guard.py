"""The guard of the commands that write the stream's live tables (rebuild --target main, reset):
refused while the stream holds its lease; otherwise a new epoch, and the stream's tables claimed
with it, so a zombie of the stream commits nothing more. delta-rs tables, no Spark."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from eo.runtime import commits
from eo.runtime.cli import NotReady
from eo.runtime.environment import environment
from eo.runtime.fencing import HOLD_SECONDS, Fence, Fenced
from eo.runtime.live_tables import QUERY, STREAM_TABLES, app_id_of, claim_while_stopped, generation, holder
from streaming import checkpoint

pytestmark = pytest.mark.unit

SCHEMA = pa.schema([("k", pa.string())])


def test_refused_while_the_stream_holds_the_lease_then_a_zombie_is_fenced_on_the_lease_and_the_tables(lake):
    silver = lake.table_path("silver")
    write_deltalake(silver, SCHEMA.empty_table())  # one of the stream's tables; the others are not there yet
    app_id = app_id_of(checkpoint.ensure_id(lake, QUERY))
    stream = Fence.start(environment(lake).lease(), QUERY, holder(), HOLD_SECONDS)  # as take_over does
    commits.append(commits.Table(silver), pa.table({"k": ["a"]}, SCHEMA), commits.Txn(app_id, stream.epoch, 1))

    with pytest.raises(
        NotReady, match=r"the stream on .* holds the stream.s live tables: stop it \(make stream-stop\) before a reset"
    ):
        claim_while_stopped(lake, "a reset")

    # The stream was paused, not stopped: its hold expires (here: it is let go) and it wakes up later.
    assert environment(lake).lease().release(QUERY, stream.epoch)
    fence = claim_while_stopped(lake, "a reset")
    assert fence.epoch == stream.epoch + 1
    with pytest.raises(Fenced):
        stream.check()  # before its next batch
    with pytest.raises(Fenced):  # or at its commit, had it passed that check already
        commits.append(commits.Table(silver), pa.table({"k": ["z"]}, SCHEMA), commits.Txn(app_id, stream.epoch, 2))
    assert commits.Table(silver).refresh().to_pyarrow_table().column("k").to_pylist() == ["a"]
    assert commits.Table(silver).reached(app_id) == (fence.epoch, 1)  # the position kept for the next stream
    assert not environment(lake).lake_files.exists(f"{lake.table_path('bronze')}/_delta_log")  # nothing created


def test_without_a_checkpoint_there_is_nothing_to_claim_but_the_epoch(lake):
    first = claim_while_stopped(lake, "rebuilding --target main")
    assert claim_while_stopped(lake, "rebuilding --target main").epoch == first.epoch + 1
    assert generation(lake) is None  # and no checkpoint was made


def test_the_guard_claims_the_tables_the_stream_writes():
    from streaming.microbatch import WRITES

    assert sorted(t.name for t in STREAM_TABLES) == sorted(t.name for t in WRITES)


def test_a_supervised_start_waits_out_a_dead_streams_hold_and_never_fences_a_reset(lake, monkeypatch):
    """`streaming run --after-dead-stream` (what stream_supervisor starts): a stream's hold that
    no longer answers is waited for until it lapses; a reset holding the lease is refused at once
    in one line, however long it was given, and keeps its epoch."""
    import time

    from streaming.run import _refuse_while_held

    lease = environment(lake).lease()
    reset = Fence.start(lease, QUERY, holder("a reset"), HOLD_SECONDS)
    began = time.monotonic()
    with pytest.raises(NotReady, match=r"^a reset on .* is writing the stream's live tables: start the stream once"):
        _refuse_while_held(lake, take_over=False, wait=60)
    assert time.monotonic() - began < 5  # not waited out
    reset.check()  # still the newest epoch: nothing fenced it
    lease.release(QUERY, reset.epoch)

    dead = Fence.start(lease, QUERY, "the stream on elsewhere pid 1 since then", 1.5)  # a driver on a lost machine
    _refuse_while_held(lake, take_over=False, wait=30)  # returns once its hold lapsed
    assert lease.held(QUERY) is None and lease.current(QUERY) == dead.epoch

    alive = Fence.start(lease, QUERY, "the stream on elsewhere pid 2 since then", HOLD_SECONDS)  # renewed: answers
    with pytest.raises(
        NotReady, match="another instance of the stream is starting or running: the stream on elsewhere"
    ):
        _refuse_while_held(lake, take_over=False, wait=0.5)
    alive.check()
