"""A warm standby: a second driver that pays its start-up in advance and takes over the moment
the active one dies.

A restarted driver spends ~15-20 s before its first batch on this machine (make bench,
recovery): JVM and Spark session, then a first batch in a cold JVM. A standby does that work
ahead of time (it rehearses the query, streaming/run.py `rehearse`) and watches an OS lock that
the active instance holds for its whole life. When the active process dies (crash, OOM, SIGKILL),
the kernel releases the lock at once. The standby then takes new epochs, which fences the old
instance in case it was only paused, and starts the query from its checkpoint.

The lock is `flock` on a file next to the checkpoints, so it covers one machine. Correctness never
rests on it: two instances that both believe they are active are still kept apart by the epochs
(jobs/fencing.py). The lock only decides when a standby should try.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path

from jobs.config import Settings
from jobs.fencing import Lease, local_root

# How long a standby leaves a lock it should not have taken, so the instance owed it gets it first.
YIELD_SECONDS = 1.0
# How often a waiting standby looks at the lock.
POLL_SECONDS = 0.1


class ActiveLock:
    """The exclusive lock that the active instance of a job holds while its process lives."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None

    @classmethod
    def for_job(cls, settings: Settings, queries: list[str]) -> ActiveLock:
        folder = Path(local_root(settings)) / "_active"
        folder.mkdir(parents=True, exist_ok=True)
        return cls(folder / f"{'+'.join(sorted(queries))}.lock")

    def _take(self, blocking: bool) -> bool:
        fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            return False
        self.fd = fd
        return True

    def try_acquire(self) -> bool:
        return self._take(blocking=False)

    def acquire(self) -> None:
        """Block until the holder's process releases it (by exiting, however it exits)."""
        self._take(blocking=True)

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor drops the flock
            self.fd = None

    def hold(self) -> None:
        """For an active instance: take the lock now, or as soon as the instance it supersedes exits.

        A newer instance started next to a live older one (by hand, or a supervisor that gave up
        on it) fences the old one through the epochs; it waits for the lock in the background so
        that a standby does not mistake the old one's exit for its turn.
        """
        if not self.try_acquire():
            threading.Thread(target=self.acquire, name="active-lock", daemon=True).start()


def wait_for_turn(lock: ActiveLock, lease: Lease, jobs: list[str], log=print) -> None:
    """Block until the active instance is gone; return holding the lock.

    The epochs seen before waiting tell whose exit the standby is waiting for. If they changed by
    the time the lock comes free, a newer instance started meanwhile and is the active one now.
    The standby then lets go and goes on waiting, for that instance.
    """
    seen = {job: lease.current(job) for job in jobs}
    while True:
        while not lock.try_acquire():
            time.sleep(POLL_SECONDS)
        now = {job: lease.current(job) for job in jobs}
        if now == seen:
            return
        log(f"[standby] a newer instance started while waiting ({seen} -> {now}); standing by for it")
        lock.release()
        seen = now
        time.sleep(YIELD_SECONDS)
