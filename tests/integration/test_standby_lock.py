"""The standby's lock: held by a live process, freed by the kernel when it dies, and a standby
takes its turn only from the instance it was standing by for.

Integration: the lock's holders are real processes (the kernel frees a flock when one dies)."""

from __future__ import annotations

import select
import subprocess
import sys
import threading
import time
from itertools import pairwise

import pytest

from eo.runtime.active import ActiveLock
from eo.runtime.fencing import FileLease
from streaming.standby import wait_for_turn

pytestmark = pytest.mark.integration

HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(600)
"""

# Generous: a waiting standby looks at the lock every 0.1 s (streaming/standby.py POLL_SECONDS).
WAIT_SECONDS = 60


@pytest.fixture
def holder():
    """Start another process that blocks until it holds the lock, then keeps it until killed.
    Every one started is killed at the end of the test, whatever happened."""
    procs: list[subprocess.Popen] = []

    def start(path) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, text=True)
        procs.append(proc)
        return proc

    try:
        yield start
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
            proc.stdout.close()


def wait_held(proc: subprocess.Popen) -> None:
    """Until the process says it holds the lock (fails after WAIT_SECONDS, or if it exits)."""
    ready, _, _ = select.select([proc.stdout], [], [], WAIT_SECONDS)
    assert ready, f"process {proc.pid} did not get the lock in {WAIT_SECONDS} s"
    assert proc.stdout.readline().strip() == "held"


class CountedLock(ActiveLock):
    """The lock, counting the standby's attempts to take it; optionally, the standby pauses right
    after letting go of it until `paused_after_release` is set (the one release after it is set)."""

    def __init__(self, path) -> None:
        super().__init__(path)
        self.failed = 0
        self.taken = 0
        self.changed = threading.Condition()
        self.paused_after_release: threading.Event | None = None

    def release(self) -> None:
        super().release()
        pause, self.paused_after_release = self.paused_after_release, None
        if pause is not None:
            pause.wait(WAIT_SECONDS)

    def try_acquire(self) -> bool:
        got = super().try_acquire()
        with self.changed:
            if got:
                self.taken += 1
            else:
                self.failed += 1
            self.changed.notify_all()
        return got

    def wait_failed(self, at_least: int) -> None:
        """Until the standby has found the lock held `at_least` times in all (fails after WAIT_SECONDS)."""
        with self.changed:
            assert self.changed.wait_for(lambda: self.failed >= at_least, WAIT_SECONDS), (
                f"the standby tried the lock {self.failed} times in {WAIT_SECONDS} s, not {at_least}"
            )

    def wait_taken(self, at_least: int) -> None:
        """Until the standby has taken the lock `at_least` times in all (fails after WAIT_SECONDS)."""
        with self.changed:
            assert self.changed.wait_for(lambda: self.taken >= at_least, WAIT_SECONDS), (
                f"the standby took the lock {self.taken} times in {WAIT_SECONDS} s, not {at_least}"
            )


def waiting(lease, lock, jobs, log=lambda _: None) -> threading.Thread:
    thread = threading.Thread(target=wait_for_turn, args=(lock, lease, jobs, log), daemon=True)
    thread.start()
    return thread


def test_the_lock_is_free_the_moment_its_holder_is_killed(tmp_path, holder):
    path = tmp_path / "job.lock"
    active = holder(path)
    wait_held(active)
    lock = ActiveLock(path)
    assert not lock.try_acquire()
    active.kill()
    active.wait()
    assert lock.try_acquire()
    lock.release()


def test_a_standby_takes_its_turn_when_the_active_instance_dies(tmp_path, holder):
    lease, path = FileLease(str(tmp_path)), tmp_path / "job.lock"
    lease.acquire("events")  # the active instance's epoch
    active = holder(path)
    wait_held(active)
    lock = CountedLock(path)
    standby = waiting(lease, lock, ["events"])
    lock.wait_failed(3)  # it looked at the lock three times and found it held
    assert standby.is_alive() and lock.taken == 0, "the standby took over from a live instance"
    active.kill()
    standby.join(WAIT_SECONDS)
    assert not standby.is_alive(), "the standby did not take over from a dead instance"
    assert lock.taken == 1 and lock.fd is not None, "the standby's turn began without the lock"
    lock.release()


def test_a_standby_leaves_the_turn_to_a_newer_instance_started_while_it_waited(tmp_path, holder):
    """The newer instance's process asks for the lock only after the standby has grabbed it on the
    old one's death: the epochs, not the race for the lock, must make the standby let go.

    The standby's pause after letting go (YIELD_SECONDS) lasts here until the newer process holds
    the lock, however long that process takes to start."""
    lease, path = FileLease(str(tmp_path)), tmp_path / "job.lock"
    lease.acquire("events")
    old = holder(path)
    wait_held(old)
    lock, said, handed_over = CountedLock(path), [], threading.Event()
    lock.paused_after_release = handed_over
    standby = waiting(lease, lock, ["events"], said.append)
    lock.wait_failed(1)  # it has read the epochs it stands by for, and waits for the old instance
    lease.acquire("events")  # a newer instance starts: it fences the old one
    old.kill()
    lock.wait_taken(1)  # the standby grabbed the lock the old instance left
    newer = holder(path)  # the newer instance's process asks for the lock
    try:
        wait_held(newer)  # it gets it: the standby saw the new epoch and let go
    finally:
        handed_over.set()
    assert len(said) == 1 and "a newer instance started while waiting" in said[0], said
    with lock.changed:
        since = lock.failed
    lock.wait_failed(since + 3)  # three more looks, each finding the newer instance holding it
    assert standby.is_alive() and lock.taken == 1, "the standby took over from the newer, live instance"
    newer.kill()
    standby.join(WAIT_SECONDS)
    assert not standby.is_alive(), "the standby did not take over from the dead newer instance"
    assert lock.taken == 2 and lock.fd is not None
    lock.release()


def test_a_waiting_standby_keeps_warm_until_its_turn_and_not_after(tmp_path, holder):
    lease, path = FileLease(str(tmp_path)), tmp_path / "job.lock"
    lease.acquire("events")
    active = holder(path)
    wait_held(active)
    lock = CountedLock(path)
    warmed = threading.Semaphore(0)
    calls: list[float] = []

    taken_at_call: list[int] = []

    def keep_warm() -> None:
        calls.append(time.monotonic())
        taken_at_call.append(lock.taken)
        warmed.release()

    standby = threading.Thread(
        target=wait_for_turn,
        args=(lock, lease, ["events"]),
        kwargs={"log": lambda _: None, "keep_warm": keep_warm, "keep_warm_every": 0.2},
        daemon=True,
    )
    standby.start()
    for n in range(3):
        assert warmed.acquire(timeout=WAIT_SECONDS), f"the standby kept warm {n} times while it waited, not 3"
    assert lock.taken == 0, "the standby took over from a live instance"
    active.kill()
    active.wait()
    standby.join(WAIT_SECONDS)
    assert not standby.is_alive(), "the standby did not take over from a dead instance"
    assert set(taken_at_call) == {0}, "the standby kept warm while it held the lock, after its turn came"
    assert all(b - a >= 0.2 for a, b in pairwise(calls)), "kept warm more often than asked"
    lock.release()
