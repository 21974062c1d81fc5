"""The standby's lock: held by a live process, freed by the kernel when it dies, and a standby
takes its turn only from the instance it was standing by for."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from jobs.fencing import FileLease
from streaming.standby import ActiveLock, wait_for_turn

pytestmark = pytest.mark.unit

HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(600)
"""


def holder(path) -> subprocess.Popen:
    """Another process that blocks until it holds the lock, then keeps it until killed."""
    return subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, text=True)


def wait_held(proc: subprocess.Popen) -> None:
    assert proc.stdout.readline().strip() == "held"


def waiting(lease, lock, jobs) -> threading.Thread:
    thread = threading.Thread(target=wait_for_turn, args=(lock, lease, jobs, lambda _: None), daemon=True)
    thread.start()
    return thread


def test_the_lock_is_free_the_moment_its_holder_is_killed(tmp_path):
    path = tmp_path / "job.lock"
    active = holder(path)
    wait_held(active)
    lock = ActiveLock(path)
    assert not lock.try_acquire()
    active.kill()
    active.wait()
    assert lock.try_acquire()
    lock.release()


def test_a_standby_takes_its_turn_when_the_active_instance_dies(tmp_path):
    lease, path = FileLease(str(tmp_path)), tmp_path / "job.lock"
    lease.acquire("events")  # the active instance's epoch
    active = holder(path)
    wait_held(active)
    standby = waiting(lease, ActiveLock(path), ["events"])
    time.sleep(1)
    assert standby.is_alive(), "the standby took over from a live instance"
    active.kill()
    standby.join(10)
    assert not standby.is_alive(), "the standby did not take over from a dead instance"


def test_a_standby_leaves_the_turn_to_a_newer_instance_started_while_it_waited(tmp_path):
    lease, path = FileLease(str(tmp_path)), tmp_path / "job.lock"
    lease.acquire("events")
    old = holder(path)
    wait_held(old)
    lock = ActiveLock(path)
    standby = waiting(lease, lock, ["events"])
    time.sleep(0.5)
    lease.acquire("events")  # a newer instance starts: it fences the old one and waits for the lock
    newer = holder(path)
    old.kill()
    wait_held(newer)  # it got the lock, if need be after the standby let go of it
    time.sleep(2)
    assert standby.is_alive(), "the standby took over from the newer, live instance"
    newer.kill()
    standby.join(10)
    assert not standby.is_alive()
    lock.release()
