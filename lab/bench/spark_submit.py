"""spark-submit for the bench's jobs, with a zip of the job packages private to the bench run.

eo.runtime.submit.submit_command zips the packages into .cache/pyfiles/, a folder other checkouts of
the repo may share (a worktree's .cache can be a link to the main checkout's): a bench run
rewriting that zip would swap the code under another checkout's running jobs. The bench builds
its own zip in its work folder instead; the command line is otherwise submit_command's.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from eo.runtime.config import REPO_ROOT, Settings
from eo.runtime.submit import build_pyfiles, spark_submit_binary, submit_conf, submit_env
from lab.instances import Instance

# Job settings that depend on the caller's environment and would change what is measured.
QUIET_ENV = {"EO_PG_DSN": ""}  # no PostgreSQL sinks: the bench measures Kafka -> Delta


def job_env(settings: Settings) -> dict[str, str]:
    """The bench's roots and topic for a spark-submit'ed job."""
    keys = ("lake_root", "checkpoint_root", "acks_root", "reports_root", "topic", "kafka_bootstrap")
    return {**QUIET_ENV, **{f"EO_{k.upper()}": str(getattr(settings, k)) for k in keys}}


@dataclass(frozen=True)
class Submitter:
    """Builds spark-submit command lines against one private zip of the job packages."""

    pyfiles: Path
    conf: dict[str, str] = field(default_factory=dict)  # --conf beyond submit_conf's (a cluster's executors)

    @classmethod
    def for_run(cls, work: Path) -> Submitter:
        return cls(build_pyfiles(work / "pyfiles" / "eo-jobs.zip"))

    def command(self, script: str, args: list[str], settings: Settings) -> list[str]:
        cmd = [spark_submit_binary(), "--master", settings.spark_master]
        for key, value in submit_conf(settings, self.conf).items():
            cmd += ["--conf", f"{key}={value}"]
        return [*cmd, "--py-files", str(self.pyfiles), str(REPO_ROOT / script), *args]

    def run(self, script: str, args: list[str], settings: Settings, log: Path, timeout: float = 3600) -> None:
        """Run a job to completion, its output into `log`; raise with the log's tail if it fails."""
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            done = subprocess.run(
                self.command(script, args, settings),
                env=submit_env(job_env(settings)),
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=timeout,
            )
        if done.returncode != 0:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
            raise RuntimeError(f"{script} {' '.join(args)} exited {done.returncode}; its log {log} ends:\n{tail}")

    def instance(self, number: int, settings: Settings, log: Path, args: list[str]) -> BenchJob:
        """A streaming job instance (lab/instances.py) that runs from this zip; not started yet."""
        return BenchJob(number, settings, job_env(settings), log, args, submitter=self)


@dataclass
class BenchJob(Instance):
    """lab.instances.Instance, submitted with the bench's own zip."""

    submitter: Submitter | None = None

    def command(self) -> list[str]:
        return self.submitter.command("jobs/stream.py", self.args, self.settings)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""
