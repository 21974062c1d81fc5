"""One instance of the stream at a time, said plainly: a start while another instance is starting
or running, or while a rebuild or reset writes the live tables, is refused in one line naming it
(host, pid, since when, epoch), before any Spark session; `--take-over` fences it instead."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from eo.runtime import commits
from eo.runtime.active import ActiveLock
from eo.runtime.cli import NotReady
from eo.runtime.environment import environment
from eo.runtime.fencing import HOLD_SECONDS, Fence
from eo.runtime.live_tables import QUERY, claim_while_stopped, holder, live_holder
from streaming import run as stream_run
from streaming.query import Knobs

pytestmark = pytest.mark.unit

SINCE = "since 2026-12-02 06:00:00 UTC"


@pytest.fixture
def started(monkeypatch) -> list[bool]:
    """What `run` went on to do once it passed its checks (no Spark here)."""
    calls: list[bool] = []

    def the_job(settings, knobs, standby, lock, take_over_held=False, new_lake=False):
        calls.append(take_over_held)
        return 0

    monkeypatch.setattr(stream_run, "_run", the_job)
    return calls


def a_dead_pid() -> int:
    pid = 4_000_000
    while Path(f"/proc/{pid}").exists():
        pid -= 1
    return pid


def test_a_second_start_beside_a_starting_instance_names_it(lake, started):
    first = ActiveLock.for_job(lake, [QUERY])
    assert first.try_acquire()  # an instance starting: its lock taken, no epoch yet
    try:
        with pytest.raises(NotReady) as refused:
            stream_run.run(lake, Knobs())
        line = str(refused.value)
        assert line.startswith("another instance of the stream is starting or running: the stream on ")
        assert f"{socket.gethostname()} pid {os.getpid()} since " in line
        assert "(make stream-stop), or start this one with --take-over" in line
        assert "\n" not in line and not started
    finally:
        first.release()


def test_a_second_start_beside_a_running_one_names_its_epoch_too(lake, started):
    first = ActiveLock.for_job(lake, [QUERY])
    assert first.try_acquire()
    running = Fence.start(environment(lake).lease(), QUERY, holder(), HOLD_SECONDS)  # as take_over does
    try:
        with pytest.raises(NotReady, match=rf"pid {os.getpid()} since .* \(epoch {running.epoch}, its hold renewed"):
            stream_run.run(lake, Knobs())
    finally:
        first.release()


def test_a_stream_on_another_machine_is_named_from_the_lease(lake, started):
    other = f"the stream on elsewhere pid 42 {SINCE}"
    Fence.start(environment(lake).lease(), QUERY, other, HOLD_SECONDS)
    with pytest.raises(NotReady, match=f"another instance of the stream is starting or running: {other}"):
        stream_run.run(lake, Knobs())
    assert not started


def test_a_rebuild_writing_the_live_tables_is_named(lake, started):
    Fence.start(environment(lake).lease(), QUERY, f"rebuilding --target main on elsewhere pid 42 {SINCE}", 60)
    with pytest.raises(NotReady, match=r"rebuilding --target main on elsewhere pid 42 .* is writing the stream"):
        stream_run.run(lake, Knobs())


def test_take_over_fences_instead_of_refusing(lake, started):
    Fence.start(environment(lake).lease(), QUERY, f"the stream on elsewhere pid 42 {SINCE}", HOLD_SECONDS)
    assert stream_run.run(lake, Knobs(), take_over=True) == 0
    assert started == [True]


def test_a_holder_that_died_on_this_machine_does_not_hold(lake, started):
    dead = f"the stream on {socket.gethostname()} pid {a_dead_pid()} {SINCE}"  # SIGKILLed: its hold outlives it
    Fence.start(environment(lake).lease(), QUERY, dead, HOLD_SECONDS)
    assert live_holder(lake) is None
    assert stream_run.run(lake, Knobs()) == 0
    assert started == [False]


def test_a_guard_a_killed_rebuild_left_lifted_is_set_again_by_the_next_writer(lake):
    silver = lake.table_path("silver")
    lifted = {"delta.appendOnly": "false"}  # as a rebuild killed between lifting and setting it leaves it
    write_deltalake(silver, pa.schema([("k", pa.string())]).empty_table(), configuration=lifted)
    claim_while_stopped(lake, "a reset")
    assert commits.Table(silver).refresh().metadata().configuration["delta.appendOnly"] == "true"
