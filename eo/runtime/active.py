"""The active lock: an OS lock (`flock`) the active instance of a job holds for its whole life.

The stream holds it while it runs; a warm standby (streaming/standby.py) waits on it. It lives
beside the checkpoints, so it covers one machine: correctness never rests on it (the epochs keep
instances apart, eo/runtime/fencing.py). The commands that must not run beside the stream (a
rebuild into the live tables, a reset) ask the lease instead, which every machine shares.
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

from eo.runtime.config import Settings
from eo.runtime.environment import environment
from eo.runtime.live_tables import STREAM, holder


class ActiveLock:
    """The exclusive lock that the active instance of a job holds while its process lives."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None

    @classmethod
    def for_job(cls, settings: Settings, queries: list[str]) -> ActiveLock:
        folder = Path(environment(settings).lock_root) / "_active"
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
        # Who holds it, for the refusal of a second start (`holder`): the lock is the process's own.
        os.ftruncate(fd, 0)
        os.pwrite(fd, holder(STREAM).encode(), 0)
        return True

    def holder(self) -> str:
        """Who holds the lock as its holder wrote it (`eo.runtime.live_tables.holder`'s form)."""
        try:
            return self.path.read_text().strip() or "an instance that has not said who it is"
        except OSError:
            return "an instance that has not said who it is"

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
