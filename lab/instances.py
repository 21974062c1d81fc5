"""One instance of the streaming job as an OS process the lab can crash, pause and resume."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from eo.runtime.config import STREAM_QUERY, Settings
from eo.runtime.environment import environment
from eo.runtime.fencing import EXIT_FENCED
from eo.runtime.monitoring import last_committed_batch
from eo.runtime.submit import submit_command, submit_env

STREAM_ARGS = ["run", "--trigger-seconds", "2", "--max-offsets-per-trigger", "4000"]


def committed_batches(settings: Settings, queries: tuple[str, ...] = (STREAM_QUERY,)) -> int:
    """Micro-batches committed so far by these queries: the newest batch id of each, plus one. Not a
    count of commit files: Spark keeps only ~100, so a count stops growing on a long run."""
    lasts = (
        last_committed_batch(settings.checkpoint_path(query), environment(settings).lake_files) for query in queries
    )
    return sum(0 if last is None else last + 1 for last in lasts)


@dataclass
class Instance:
    number: int
    settings: Settings
    env: dict[str, str]
    log: Path
    args: list[str] = field(default_factory=lambda: list(STREAM_ARGS))
    proc: subprocess.Popen | None = None
    started_at: float = 0.0
    commits_at_start: int = 0

    def start(self) -> Instance:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.commits_at_start = committed_batches(self.settings)
        self.started_at = time.time()
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                self.command(),
                env=submit_env(self.env),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: JVM and Python die together
            )
        return self

    def command(self) -> list[str]:
        """The spark-submit command line of this instance: the stream's own script, with the lab's hooks."""
        return submit_command("lab/hooked.py", ["jobs/stream.py", *self.args], self.settings)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def count_from(self, moment: float) -> None:
        """Time the first commit from `moment`: a standby's clock starts when the active one dies."""
        self.started_at = moment
        self.commits_at_start = committed_batches(self.settings)

    def wait_first_commit(self, timeout: float = 180.0) -> float | None:
        """Seconds from start to the first batch it committed, of either query (None if it died first)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if committed_batches(self.settings) > self.commits_at_start:
                return time.time() - self.started_at
            if not self.alive:
                return None
            time.sleep(0.2)
        return None

    def signal(self, sig: int) -> None:
        if self.alive:
            os.killpg(self.proc.pid, sig)

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        self.wait(30)

    def wait(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout) if self.proc else None
        except subprocess.TimeoutExpired:
            return None

    @property
    def fenced(self) -> bool:
        return self.proc is not None and self.proc.returncode == EXIT_FENCED
