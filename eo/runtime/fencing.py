"""Fencing: a stale (zombie) instance of a job can never commit once a newer one has started.

Every start of a job takes a new epoch from a lease: a row in PostgreSQL, an item in DynamoDB
(instances on different machines: the cloud), or an exclusively created file next to the
checkpoints (one machine). Commits are fenced two ways:
- PostgreSQL: the committing transaction locks the lease row and checks the epoch (FOR UPDATE),
  so a zombie's transaction is refused atomically.
- Delta: commits carry a transaction id (app id = job, version = epoch << 40 | position); the new
  instance first claims every table it writes with its epoch. A writer refuses to commit when a
  newer epoch holds the table, and a commit that raced the claim fails (eo/runtime/commits.py).
"""

from __future__ import annotations

import os
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


class Lease(Protocol):
    def acquire(self, job: str) -> int: ...

    def current(self, job: str) -> int: ...


class FileLease:
    """Epochs as files created with O_EXCL: atomic on a local file system."""

    def __init__(self, root: str) -> None:
        self.root = Path(root)

    def _folder(self, job: str) -> Path:
        folder = self.root / "_leases" / job
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def current(self, job: str) -> int:
        epochs = [int(p.name) for p in self._folder(job).iterdir() if p.name.isdigit()]
        return max(epochs, default=0)

    def acquire(self, job: str) -> int:
        while True:
            epoch = self.current(job) + 1
            try:
                os.close(os.open(self._folder(job) / str(epoch), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                return epoch
            except FileExistsError:
                continue  # another instance took it: take the next one


LEASE_DDL = """
CREATE TABLE IF NOT EXISTS job_lease (
    job TEXT PRIMARY KEY,
    epoch BIGINT NOT NULL,
    started_at TIMESTAMPTZ NOT NULL DEFAULT now()
)
"""


class PostgresLease:
    """The lease row of each job, in the same database the external sink commits to."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        with self.connect() as conn:
            conn.execute(LEASE_DDL)

    def connect(self):
        import psycopg

        return psycopg.connect(self.dsn, autocommit=False)

    def acquire(self, job: str) -> int:
        with self.connect() as conn:
            row = conn.execute(
                "INSERT INTO job_lease (job, epoch) VALUES (%s, 1) "
                "ON CONFLICT (job) DO UPDATE SET epoch = job_lease.epoch + 1, started_at = now() "
                "RETURNING epoch",
                (job,),
            ).fetchone()
            return int(row[0])

    def current(self, job: str) -> int:
        with self.connect() as conn:
            row = conn.execute("SELECT epoch FROM job_lease WHERE job = %s", (job,)).fetchone()
            return int(row[0]) if row else 0


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
    def start(cls, lease: Lease, job: str) -> Fence:
        return cls(lease, job, lease.acquire(job))

    def check(self) -> None:
        current = self.lease.current(self.job)
        if current != self.epoch:
            raise Fenced(f"{self.job}: epoch {self.epoch} was superseded by epoch {current}; stopping")

    def position(self, batch_id: int) -> int:
        """A micro-batch's position in the job's transaction versions (0 means none yet)."""
        return batch_id + 1
