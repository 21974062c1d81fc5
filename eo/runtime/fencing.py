"""Fencing: a stale (zombie) instance of a job can never commit once a newer one has started.

Every start of a job takes a new epoch from a lease: a row in PostgreSQL, an item in DynamoDB
(instances on different machines: the cloud), or an exclusively created file next to the
checkpoints (one machine). Commits are fenced two ways:
- PostgreSQL: the committing transaction locks the lease row and checks the epoch (FOR UPDATE),
  so a zombie's transaction is refused atomically.
- Delta: commits carry a transaction id (app id = job, version = epoch << 40 | position); the new
  instance first claims every table it writes with its epoch. A writer refuses to commit when a
  newer epoch holds the table, and a commit that raced the claim fails: a claim changes the
  table's metadata, which delta-rs refuses every commit built before it for, whatever its app id
  (eo/runtime/commits.py `claim`).
- The lease itself, after the table was read and before every commit of the stream (`Txn.fence`):
  a newer epoch taken under another app id (a reset of a lost checkpoint) is seen there, or its
  claim lands after that read and refuses the commit: the fence holds at the write itself.

The lease also says whether the stream holds it right now, and what holds it: the stream, a
reset or a rebuild into main record themselves as holder (eo/runtime/live_tables.py `holder`,
`holder_kind`) when they take their epoch and renew an expiry on a heartbeat. Commands that must not run beside
the stream (a rebuild into the live tables, a reset) refuse while a live holder is recorded, on
one machine or many (eo/runtime/live_tables.py `claim_while_stopped`).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

EXIT_FENCED = 75  # EX_TEMPFAIL: the supervisor should not count it as a crash to retry


class Fenced(RuntimeError):
    """A newer instance of this job holds the lease: this one must stop without committing."""


EPOCH_SHIFT = 40  # 2^40 positions (micro-batches) per epoch: decades at several batches a second


def encode_version(epoch: int, position: int) -> int:
    """A Delta transaction version: the epoch in the high bits, the writer's position below."""
    if not 0 <= position < 1 << EPOCH_SHIFT or epoch < 0:
        raise ValueError(f"epoch {epoch} or position {position} out of range")
    return (epoch << EPOCH_SHIFT) + position


def decode_version(version: int) -> tuple[int, int]:
    return version >> EPOCH_SHIFT, version & ((1 << EPOCH_SHIFT) - 1)


@dataclass(frozen=True)
class HeldBy:
    """A live holder of a job's lease: the instance that took `epoch` and renews it until `expires_at`."""

    holder: str
    epoch: int
    expires_at: float  # Unix seconds, by the renewing machine's clock

    @property
    def until(self) -> str:
        return dt.datetime.fromtimestamp(self.expires_at, dt.UTC).strftime("%H:%M:%S UTC")

    def __str__(self) -> str:
        return f"{self.holder}, epoch {self.epoch}, renewed until {self.until}"


class Lease(Protocol):
    """Increasing epochs per job, and who holds the newest one right now.

    `acquire` takes the next epoch; with a holder and a ttl it also records that the holder (the
    stream) holds it until now + ttl. `renew` extends that, and `release` ends it, only while the
    epoch is still the newest. `held` reports a holder whose hold has not expired."""

    def acquire(self, job: str, holder: str = "", ttl: float = 0.0) -> int: ...

    def current(self, job: str) -> int: ...

    def renew(self, job: str, epoch: int, ttl: float) -> bool: ...

    def release(self, job: str, epoch: int) -> bool: ...

    def held(self, job: str) -> HeldBy | None: ...


def live(holder: str, epoch: int, expires_at: float, now: float) -> HeldBy | None:
    return HeldBy(holder, epoch, expires_at) if holder and expires_at > now else None


class FileLease:
    """Epochs as files, each made with its hold record in it by a hard link (which, like O_EXCL,
    fails when the name exists): atomic on a local file system. A renewal or release replaces
    only its own epoch's file (os.replace is atomic), so a stale one cannot touch a newer hold."""

    def __init__(self, root: str, clock: Callable[[], float] = time.time) -> None:
        self.root, self.clock = Path(root), clock

    def _folder(self, job: str) -> Path:
        folder = self.root / "_leases" / job
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def current(self, job: str) -> int:
        epochs = [int(p.name) for p in self._folder(job).iterdir() if p.name.isdigit()]
        return max(epochs, default=0)

    def _record(self, folder: Path, holder: str, ttl: float) -> str:
        """A scratch file holding (holder, expires_at), to be linked or moved into place."""
        fd, path = tempfile.mkstemp(dir=folder, prefix=".hold-")
        with os.fdopen(fd, "w") as out:
            json.dump({"holder": holder, "expires_at": self.clock() + ttl if holder else 0.0}, out)
        return path

    def _read(self, job: str, epoch: int) -> tuple[str, float]:
        try:
            text = (self._folder(job) / str(epoch)).read_text()
        except FileNotFoundError:
            return "", 0.0
        record = json.loads(text) if text else {}  # epochs taken before holds existed are empty
        return record.get("holder", ""), float(record.get("expires_at", 0.0))

    def acquire(self, job: str, holder: str = "", ttl: float = 0.0) -> int:
        folder = self._folder(job)
        while True:
            epoch = self.current(job) + 1
            record = self._record(folder, holder, ttl)
            try:
                os.link(record, folder / str(epoch))
                return epoch
            except FileExistsError:
                continue  # another instance took it: take the next one
            finally:
                os.unlink(record)

    def _rewrite(self, job: str, epoch: int, holder: str, ttl: float) -> bool:
        if self.current(job) != epoch:
            return False
        os.replace(self._record(self._folder(job), holder, ttl), self._folder(job) / str(epoch))
        return True

    def renew(self, job: str, epoch: int, ttl: float) -> bool:
        holder, _ = self._read(job, epoch)
        return bool(holder) and self._rewrite(job, epoch, holder, ttl)

    def release(self, job: str, epoch: int) -> bool:
        return self._rewrite(job, epoch, "", 0.0)

    def held(self, job: str) -> HeldBy | None:
        epoch = self.current(job)
        holder, expires_at = self._read(job, epoch)
        return live(holder, epoch, expires_at, self.clock())


LEASE_DDL = """
CREATE TABLE IF NOT EXISTS job_lease (
    job TEXT PRIMARY KEY,
    epoch BIGINT NOT NULL,
    started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    holder TEXT NOT NULL DEFAULT '',
    expires_at DOUBLE PRECISION NOT NULL DEFAULT 0
);
-- a lease table made before holds were recorded
ALTER TABLE job_lease ADD COLUMN IF NOT EXISTS holder TEXT NOT NULL DEFAULT '';
ALTER TABLE job_lease ADD COLUMN IF NOT EXISTS expires_at DOUBLE PRECISION NOT NULL DEFAULT 0
"""


class PostgresLease:
    """The lease row of each job, in the same database the external sink commits to. Every change
    is one statement on the row (an UPDATE is atomic and waits for a commit holding the row)."""

    def __init__(self, dsn: str, clock: Callable[[], float] = time.time) -> None:
        self.dsn, self.clock = dsn, clock
        with self.connect() as conn:
            conn.execute(LEASE_DDL)

    def connect(self):
        import psycopg

        return psycopg.connect(self.dsn, autocommit=False)

    def acquire(self, job: str, holder: str = "", ttl: float = 0.0) -> int:
        expires_at = self.clock() + ttl if holder else 0.0
        with self.connect() as conn:
            row = conn.execute(
                "INSERT INTO job_lease (job, epoch, holder, expires_at) VALUES (%s, 1, %s, %s) "
                "ON CONFLICT (job) DO UPDATE SET epoch = job_lease.epoch + 1, started_at = now(), "
                "holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at "
                "RETURNING epoch",
                (job, holder, expires_at),
            ).fetchone()
            return int(row[0])

    def current(self, job: str) -> int:
        with self.connect() as conn:
            row = conn.execute("SELECT epoch FROM job_lease WHERE job = %s", (job,)).fetchone()
            return int(row[0]) if row else 0

    def renew(self, job: str, epoch: int, ttl: float) -> bool:
        with self.connect() as conn:
            return (
                conn.execute(
                    "UPDATE job_lease SET expires_at = %s WHERE job = %s AND epoch = %s AND holder <> ''",
                    (self.clock() + ttl, job, epoch),
                ).rowcount
                == 1
            )

    def release(self, job: str, epoch: int) -> bool:
        with self.connect() as conn:
            return (
                conn.execute(
                    "UPDATE job_lease SET holder = '', expires_at = 0 WHERE job = %s AND epoch = %s", (job, epoch)
                ).rowcount
                == 1
            )

    def held(self, job: str) -> HeldBy | None:
        with self.connect() as conn:
            row = conn.execute("SELECT holder, epoch, expires_at FROM job_lease WHERE job = %s", (job,)).fetchone()
        return live(row[0], int(row[1]), float(row[2]), self.clock()) if row else None


def assert_epoch_in(conn, job: str, epoch: int) -> None:
    """Inside the committing transaction: lock the lease row and refuse if a newer epoch holds it."""
    row = conn.execute("SELECT epoch FROM job_lease WHERE job = %s FOR UPDATE", (job,)).fetchone()
    current = int(row[0]) if row else 0
    if current != epoch:
        raise Fenced(f"{job}: epoch {epoch} was superseded by epoch {current}; refusing to commit")


@dataclass
class Fence:
    """This instance's epoch for one job, and the checks its commits make."""

    lease: Lease
    job: str
    epoch: int

    @classmethod
    def start(cls, lease: Lease, job: str, holder: str = "", ttl: float = 0.0) -> Fence:
        """A new epoch; with a holder, also held by it for `ttl` seconds (renew it: `Heartbeat`)."""
        return cls(lease, job, lease.acquire(job, holder, ttl))

    def check(self) -> None:
        current = self.lease.current(self.job)
        if current != self.epoch:
            raise Fenced(f"{self.job}: epoch {self.epoch} was superseded by epoch {current}; stopping")

    def position(self, batch_id: int) -> int:
        """A micro-batch's position in the job's transaction versions (0 means none yet)."""
        return batch_id + 1


# The stream holds its lease for HOLD_SECONDS and renews it every HEARTBEAT_SECONDS. Why: five
# renewals can fail in a row (a network blip, throttling) before a running stream looks stopped,
# and a stream that died without letting go (SIGKILL, a lost machine) keeps a reset or a rebuild
# of the live tables waiting one minute at most. Correctness never rests on the hold: a command
# that proceeds takes a new epoch, which fences a stream that was only paused.
HEARTBEAT_SECONDS = 10.0
HOLD_SECONDS = 60.0


class Heartbeat:
    """Renews a fence's hold on a background thread until stopped; stops on its own once a newer
    epoch has taken over (the instance is then fenced, and its next check stops it)."""

    def __init__(self, fence: Fence, every: float = HEARTBEAT_SECONDS, ttl: float = HOLD_SECONDS, log=print) -> None:
        self.fence, self.every, self.ttl, self.log = fence, every, ttl, log
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lease-heartbeat", daemon=True)

    def beat(self) -> bool:
        """One renewal; False once the epoch is superseded (or the hold was released)."""
        return self.fence.lease.renew(self.fence.job, self.fence.epoch, self.ttl)

    def _run(self) -> None:
        while not self._stopped.wait(self.every):
            try:
                if not self.beat():
                    self.log(f"[lease] {self.fence.job} epoch {self.fence.epoch} was superseded: no more renewals")
                    return
            except Exception as exc:  # noqa: BLE001 (transient: the next beat tries again before expiry)
                self.log(f"[lease] renewing {self.fence.job} failed, trying again: {exc}")

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def stop(self, release: bool = True) -> None:
        """Stop renewing; by default also let go of the hold (a no-op once superseded)."""
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)  # a renewal in flight must not land after the release
        if not release:
            return
        try:
            self.fence.lease.release(self.fence.job, self.fence.epoch)
        except Exception as exc:  # noqa: BLE001 (the job's own outcome matters more: the hold lapses anyway)
            self.log(f"[lease] releasing {self.fence.job} failed ({exc}): the hold lapses within {self.ttl:.0f} s")


@contextmanager
def holding(fence: Fence) -> Iterator[None]:
    """A hold on the lease (`Fence.start` with a holder), renewed while the block runs (what the
    stream, `rebuild --target main` and `ops.reset` respect of each other) and let go when it
    ends, however it ends here.

    SIGTERM (make stream-stop, a cancelled job run) lets go first: a reset right after a stop is
    not refused until the hold expires. Then the handler that was there before decides: a Python
    one (the stream's requested stop, streaming/requested_stop.py) ends the run its way; else the
    process ends at once, as SIGTERM would. Only the main thread can set a handler (a test may run
    the job on another)."""
    heartbeat = Heartbeat(fence).start()
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGTERM) if main else None

    def stop(signum: int, frame) -> None:
        heartbeat.stop()
        if callable(previous):
            previous(signum, frame)
            return
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    if main:
        signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)
        heartbeat.stop()
