"""The streaming job as a service, behind the environment switch: what the supervisor DAG asks.

- local, local-s3: a spark-submit process on this machine (infra/streaming.py: pid files, a warm
  standby that may take over);
- aws (`job_runner = "emr-serverless"`): a long-running EMR Serverless job run named `eo-stream`.

Chosen once, from the settings (`stream_service`). Either way the job resumes from its checkpoint
and takes a new epoch when it starts, so a restart never doubles or loses a batch.

    python -m ops.stream_service start|kill     # what the supervisor would do, by hand
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Protocol

from eo.runtime.config import Settings, load_settings
from eo.runtime.environment import environment

# The supervisor starts a job run only once none of the stream's is live (`kill` waits for them to
# end), and only while no reset or rebuild into main holds the lease (`supervise`). A crashed
# driver's hold may outlive it on its lost machine for up to a minute: the run waits for it to
# lapse, then fences it; it never fences a reset or a rebuild that started meanwhile, and says so
# in one line (streaming/run.py `--after-dead-stream`). Never `--take-over`: that fences anything.
STREAM_SCRIPT, STREAM_ARGS = "jobs/stream.py", ["run", "--after-dead-stream"]


class StreamService(Protocol):
    def running(self) -> bool: ...

    def start(self) -> str | None: ...  # what was started (a pid, a job run id); None: a standby took over

    def kill(self) -> str | None: ...  # what was stopped, as a crash would

    def held(self) -> str | None: ...  # why the stream must stay stopped (stopped by hand), or None

    def started_at(self) -> float | None: ...  # when the running instance started (epoch s); None: none runs


class LocalStreamService:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def running(self) -> bool:
        from infra import streaming

        return streaming.running(self.settings)

    def start(self) -> str | None:
        from infra import streaming

        pid = streaming.start(self.settings)
        return None if pid is None else f"pid {pid}"

    def kill(self) -> str | None:
        from infra import streaming

        pid = streaming.kill(self.settings)
        return None if pid is None else f"pid {pid}"

    def held(self) -> str | None:
        from infra import streaming

        return streaming.held(self.settings)

    def started_at(self) -> float | None:
        from infra import streaming

        return streaming.started_at(self.settings)


class StillCancelling(RuntimeError):
    """A cancelled stream job run has not ended yet: no new one may start beside it."""


class EmrStreamService:
    """The stream as an EMR Serverless job run of the same module (eo/cloud/emr_serverless.py).

    A run counts as live until it has ended, CANCELLING included (emr_serverless.LIVE): a restart
    never overlaps the run it replaces."""

    NAME = "eo-stream"
    # How long `kill` waits for the runs it cancelled to end, and how often it looks. No grace
    # period is asked for, so a run is usually CANCELLED within a minute or two.
    CANCEL_WAIT_SECONDS, POLL_SECONDS = 300.0, 10.0

    def __init__(self, settings: Settings, client=None) -> None:
        from eo.cloud import emr_serverless

        self.settings = settings
        outputs = emr_serverless.terraform_outputs(settings)
        self.application = str(outputs["emr_application_id"])
        self.client = client or emr_serverless.aws_client("emr-serverless", str(outputs["region"]))

    def live_states(self) -> dict[str, str]:
        """The stream's job runs that have not ended: id -> state."""
        from eo.cloud.emr_serverless import live_runs

        return {run["id"]: run["state"] for run in live_runs(self.client, self.application, self.NAME)}

    def live_runs(self) -> list[str]:
        return list(self.live_states())

    def running(self) -> bool:
        return bool(self.live_runs())

    def start(self) -> str | None:
        from eo.cloud import emr_serverless

        if self.running():
            return None
        run_id = emr_serverless.run(
            self.settings, STREAM_SCRIPT, STREAM_ARGS, client=self.client, wait=False, name=self.NAME
        )
        return f"job run {run_id}"

    def kill(self) -> str | None:
        """Cancel the live runs (one already CANCELLING is not cancelled twice) and wait until they
        have ended, so that a start right after it does not overlap them."""
        runs = self.live_states()
        for run_id, state in runs.items():
            if state != "CANCELLING":
                self.client.cancel_job_run(applicationId=self.application, jobRunId=run_id)
        deadline = time.monotonic() + self.CANCEL_WAIT_SECONDS
        while left := sorted(set(self.live_runs()) & runs.keys()):
            if time.monotonic() >= deadline:
                raise StillCancelling(f"job runs {', '.join(left)} still cancelling: nothing starts beside them")
            time.sleep(self.POLL_SECONDS)
        return f"job runs {', '.join(runs)}" if runs else None

    def held(self) -> str | None:
        return None  # a job run cancelled by hand is started again: pause the supervisor DAG

    def started_at(self) -> float | None:
        """When the live run began running (its current attempt's start, where EMR says); a run not
        running yet (submitted, scheduled) is starting now. None when no run is live."""
        from eo.cloud.emr_serverless import live_runs

        runs = live_runs(self.client, self.application, self.NAME)
        if not runs:
            return None
        if any(run["state"] != "RUNNING" for run in runs):
            return time.time()
        starts = []
        for run in runs:
            details = self.client.get_job_run(applicationId=self.application, jobRunId=run["id"])["jobRun"]
            times = [details.get(key) or run.get(key) for key in ("createdAt", "attemptCreatedAt", "startedAt")]
            starts.append(max(t.timestamp() for t in times if t is not None))
        return max(starts)


def lease_holder(settings: Settings) -> dict | None:
    """Who holds the stream's lease and answers (its hold renewed, its process not known gone):
    {"kind": stream | reset | rebuild | other, "holder": the record as a line}; None: no one."""
    from eo.runtime.live_tables import holder_kind, live_holder

    held = live_holder(settings)
    return None if held is None else {"kind": holder_kind(held), "holder": str(held)}


def observe(service: StreamService, queries: dict[str, dict], now: float | None = None, lease=None) -> dict:
    """What the supervisor judges by: whether the stream runs, why it must stay stopped, when its
    running instance started and how long ago, its queries' health (`queries`, from
    eo/runtime/monitoring.py `health`, read just before), and who holds the lease (`lease`, from
    `lease_holder`)."""
    now = time.time() if now is None else now
    running = service.running()
    started = service.started_at() if running else None
    return {
        "running": running,
        "held": service.held(),
        "started_at": started,
        "seconds_since_start": None if started is None else max(0.0, now - started),
        "queries": queries,
        "lease": lease,
    }


def waiting_for(lease: dict | None, running: bool) -> str | None:
    """Why the supervisor must neither kill nor start now, as its one line, or None.

    A reset or a rebuild into main holds the lease: fencing it would make it fail midway. A
    stream instance that the service does not run holds it and still renews it: it answers (a
    stream started by hand elsewhere), or it died within the last minute and its hold has not
    lapsed yet. Only a stream's hold that no longer answers is taken over (by the start's epoch)."""
    if lease is None:
        return None
    kind, holder = lease["kind"], lease["holder"]
    if kind in ("reset", "rebuild", "other"):
        what = {"reset": "python -m ops.reset", "rebuild": "python -m batch.rebuild --target main"}.get(kind, "it")
        return (
            f"waiting: {holder} holds the stream's live tables ({kind}); the stream is started again at the first "
            f"check after it has ended. Nothing to do: let {what} finish (to give up on it instead, stop it, "
            "then `python -m ops.stream_service start`)"
        )
    if not running:
        return (
            f"waiting: {holder} holds the stream's lease and still renews it, but this service does not run it; "
            "the stream is started at the first check after its hold lapses (a dead driver's within a minute). "
            "If it runs elsewhere, stop it there, or leave it running and pause stream_supervisor"
        )
    return None


def silence(query: dict, seconds_since_start: float | None) -> tuple[float, str] | None:
    """How long the running instance has gone without committing, and since what: its last commit
    or its start, whichever is later (a commit before this instance started says nothing about
    it). None when neither is known."""
    known = [
        (seconds, since)
        for seconds, since in ((query["seconds_since_commit"], "its last commit"), (seconds_since_start, "it started"))
        if seconds is not None
    ]
    return min(known) if known else None


def stalled_queries(report: dict, max_silence_minutes: float) -> dict[str, str]:
    """The queries behind Kafka whose running instance has committed nothing for longer than
    allowed, counted from its start or its last commit, whichever is later; each with why."""
    stalled = {}
    for name, query in report["queries"].items():
        quiet = silence(query, report.get("seconds_since_start"))
        if query["lag"] > 0 and quiet is not None and quiet[0] > max_silence_minutes * 60:
            seconds, since = quiet
            stalled[name] = f"{name} {query['lag']:,} records behind, nothing committed for {seconds / 60:.0f} min"
            stalled[name] += f" (since {since})"
    return stalled


# How `supervise` begins a line that says it started the stream (or a standby took it over).
RESTARTED = ("restarted as ", "a standby took over ")


def restarted(outcome: str | None) -> bool:
    """Whether `supervise`'s line says the stream was started again (what the runs list shows)."""
    return bool(outcome) and outcome.startswith(RESTARTED)


def supervise(service: StreamService, report: dict, max_silence_minutes: float, restart: bool) -> str:
    """Restart a dead or stalled stream (a stalled one is killed first); say what was done. Never
    while a reset or a rebuild into main holds the lease, or a stream this service does not run
    still renews it (`waiting_for`): the one line says what it waits for."""
    stalled = stalled_queries(report, max_silence_minutes)
    if report["running"] and not stalled:
        return "healthy"
    if not report["running"] and report.get("held"):
        return f"left stopped: {report['held']}; make stream-start resumes it"
    waiting = waiting_for(report.get("lease"), report["running"])
    if waiting:
        return waiting
    reason = f"stalled: {'; '.join(stalled.values())}" if stalled else "the stream was not running"
    if not restart:
        return f"{reason}; restart disabled"
    if report["running"]:
        service.kill()
    started = service.start()
    if started is None:
        return f"a standby took over ({reason}); it resumes from the checkpoint"
    return f"restarted as {started} ({reason}); it resumes from the checkpoint"


# How each job runner runs the stream; the environment (eo/runtime/environment.py) picks one.
SERVICES = {"spark-submit": LocalStreamService, "emr-serverless": EmrStreamService}


def stream_service(settings: Settings) -> StreamService:
    return environment(settings).job_runner(SERVICES)(settings)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ops.stream_service",
        description="Start the stream where the environment runs it (a local process, or the EMR "
        "Serverless job run eo-stream that the stream_supervisor DAG watches), or kill it as a crash would.",
    )
    parser.add_argument("action", choices=["start", "kill"])
    args = parser.parse_args(argv)
    service = stream_service(load_settings())
    if args.action == "start":
        started = service.start()
        print(f"stream started: {started}" if started else "the stream is already running (or a standby took over)")
    else:
        killed = service.kill()
        print(f"stream killed: {killed}" if killed else "the stream was not running")
    return 0


if __name__ == "__main__":
    sys.exit(main())
