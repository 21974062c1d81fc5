"""The stream as a service in each environment: the supervisor's decisions, and on AWS the
EMR Serverless job run it starts, watches and cancels (against moto's AWS)."""

from __future__ import annotations

import shutil
import time

import pytest

from eo.runtime.config import load_settings
from ops.stream_service import (
    EmrStreamService,
    LocalStreamService,
    StillCancelling,
    observe,
    stalled_queries,
    stream_service,
    supervise,
)
from tests.dags.test_emr_serverless import aws  # noqa: F401 - the moto AWS fixture

pytestmark = pytest.mark.unit


class FakeService:
    def __init__(self, started: str | None = "pid 7", started_at: float | None = None) -> None:
        self.calls: list[str] = []
        self.started = started
        self.since = started_at

    def running(self) -> bool:
        return True

    def held(self) -> str | None:
        return None

    def started_at(self) -> float | None:
        return self.since

    def start(self) -> str | None:
        self.calls.append("start")
        return self.started

    def kill(self) -> str | None:
        self.calls.append("kill")
        return "pid 6"


def report(running: bool, lag: int = 0, silent_s: float | None = 10.0, since_start: float | None = None) -> dict:
    return {
        "running": running,
        "seconds_since_start": since_start,
        "queries": {"events": {"lag": lag, "seconds_since_commit": silent_s}},
    }


def test_a_healthy_stream_is_left_alone_and_a_dead_one_restarted():
    service = FakeService()
    assert supervise(service, report(True, lag=100), 15, True) == "healthy"
    assert supervise(service, report(True, lag=0, silent_s=7200), 15, True) == "healthy"  # idle, not stalled
    assert service.calls == []
    restarted = supervise(service, report(False), 15, True)
    assert restarted == "restarted as pid 7 (the stream was not running); it resumes from the checkpoint"
    assert service.calls == ["start"]


def test_a_stream_stopped_by_hand_stays_stopped_until_started_by_hand(lake, capsys):
    from infra import streaming

    service = FakeService()
    held = report(False) | {"held": "stopped by hand at 2026-11-25 23:00:00 UTC (make stream-stop)"}
    assert supervise(service, held, 15, True) == (
        "left stopped: stopped by hand at 2026-11-25 23:00:00 UTC (make stream-stop); make stream-start resumes it"
    )
    assert service.calls == []
    # The CLI's stop holds it (and says so); its start releases it. Nothing runs in this lake.
    local = LocalStreamService(lake)
    assert local.held() is None
    streaming._stop(lake, None)
    assert "leaves it stopped until `make stream-start`" in capsys.readouterr().out
    assert local.held().startswith("stopped by hand at ")
    streaming.hold_file(lake).unlink()  # what _start does first
    assert local.held() is None
    shutil.rmtree(streaming.home(lake))


RESET_LEASE = {
    "kind": "reset",
    "holder": "a reset on h pid 9 since 2026-12-06 16:00:00 UTC, epoch 7, renewed until 16:10:00 UTC",
}


def test_a_reset_or_rebuild_holding_the_lease_is_waited_for_never_fenced():
    service = FakeService()
    for running, lag, silent in ((False, 0, 10.0), (True, 5, 3600)):  # dead, or stalled
        outcome = supervise(service, report(running, lag=lag, silent_s=silent) | {"lease": RESET_LEASE}, 15, True)
        assert outcome.startswith(f"waiting: {RESET_LEASE['holder']} holds the stream's live tables (reset); ")
        assert "let python -m ops.reset finish" in outcome and "\n" not in outcome
    rebuild = {"kind": "rebuild", "holder": "rebuilding --target main on h pid 3 since then, epoch 8"}
    assert "let python -m batch.rebuild --target main finish" in supervise(
        service, report(False) | {"lease": rebuild}, 15, True
    )
    assert service.calls == []  # neither killed nor started
    alive = {"kind": "stream", "holder": "the stream on laptop pid 4 since then, epoch 9, renewed until later"}
    assert supervise(service, report(False) | {"lease": alive}, 15, True).startswith(
        "waiting: the stream on laptop pid 4 since then, epoch 9, renewed until later holds the stream's lease and "
        "still renews it, but this service does not run it"
    )
    assert service.calls == []
    # The stream this service runs holds it, stalled: killed, then started (its start takes over once it lapsed).
    assert supervise(service, report(True, lag=5, silent_s=3600) | {"lease": alive}, 15, True).startswith("restarted")
    assert service.calls == ["kill", "start"]


def test_locally_the_supervisor_waits_beside_a_reset_then_starts_the_stream(lake, monkeypatch):
    """A reset beside the supervisor, on one machine: the reset's real hold (a file lease, as
    ops.reset takes it) is seen, named in the task's line, and nothing is started until it ends."""
    from eo.runtime.live_tables import holding_live_tables
    from infra import streaming
    from ops.stream_service import lease_holder

    service = LocalStreamService(lake)
    started: list[str] = []
    monkeypatch.setattr(streaming, "start", lambda settings, args=None: started.append("start") or 4242)
    queries = {"events": {"lag": 0, "seconds_since_commit": None}}
    with holding_live_tables(lake, "a reset") as fence:
        seen = observe(service, queries, lease=lease_holder(lake))
        assert seen["lease"]["kind"] == "reset" and seen["lease"]["holder"].startswith("a reset on ")
        outcome = supervise(service, seen, 15, True)
        assert outcome.startswith("waiting: a reset on ") and f"epoch {fence.epoch}" in outcome
        assert started == []
    assert supervise(service, observe(service, queries, lease=lease_holder(lake)), 15, True) == (
        "restarted as pid 4242 (the stream was not running); it resumes from the checkpoint"
    )


def test_a_stalled_stream_is_killed_then_started_unless_restarts_are_off():
    service = FakeService(started=None)
    stalled = "stalled: events 5 records behind, nothing committed for 60 min (since its last commit)"
    assert supervise(service, report(True, lag=5, silent_s=3600), 15, False) == f"{stalled}; restart disabled"
    assert service.calls == []
    outcome = supervise(service, report(True, lag=5, silent_s=3600), 15, True)
    assert outcome == f"a standby took over ({stalled}); it resumes from the checkpoint"
    assert service.calls == ["kill", "start"]


def test_a_stream_started_after_a_long_stop_is_judged_from_its_start_not_the_last_commit():
    """The last commit was made before the stop: the instance running now has had only since its
    start to commit, and is left alone until that is longer than allowed."""
    service = FakeService()
    long_stop = report(True, lag=20_000, silent_s=1962, since_start=150)  # started 2.5 min ago
    assert stalled_queries(long_stop, 15) == {}
    assert supervise(service, long_stop, 15, True) == "healthy"
    slow_start = report(True, lag=20_000, silent_s=7200, since_start=14 * 60)  # slower than a check interval
    assert supervise(service, slow_start, 15, True) == "healthy"
    assert service.calls == []
    # Still nothing committed 16 min after its start: stalled, counted from the start.
    stuck = report(True, lag=20_000, silent_s=8000, since_start=16 * 60)
    assert stalled_queries(stuck, 15) == {
        "events": "events 20,000 records behind, nothing committed for 16 min (since it started)"
    }
    assert supervise(service, stuck, 15, True).startswith("restarted as pid 7 (stalled: events 20,000 records")
    assert service.calls == ["kill", "start"]


def test_whichever_is_later_counts_a_start_or_a_commit():
    # Committed since its start: the commit counts.
    assert stalled_queries(report(True, lag=5, silent_s=20 * 60, since_start=3600), 15) == {
        "events": "events 5 records behind, nothing committed for 20 min (since its last commit)"
    }
    assert stalled_queries(report(True, lag=5, silent_s=60, since_start=3600), 15) == {}
    # Nothing ever committed (a new checkpoint): only the start can say, and it does.
    assert stalled_queries(report(True, lag=5, silent_s=None, since_start=60), 15) == {}
    assert list(stalled_queries(report(True, lag=5, silent_s=None, since_start=3600), 15)) == ["events"]
    # Neither known: nothing to judge by. No lag: idle, never stalled.
    assert stalled_queries(report(True, lag=5, silent_s=None, since_start=None), 15) == {}
    assert stalled_queries(report(True, lag=0, silent_s=7200, since_start=7200), 15) == {}


def test_the_supervisor_observes_when_the_running_instance_started():
    queries = {"events": {"lag": 3, "seconds_since_commit": 4000.0}}
    seen = observe(FakeService(started_at=1_000.0), queries, now=1_090.0)
    assert seen == {
        "running": True,
        "held": None,
        "started_at": 1_000.0,
        "seconds_since_start": 90.0,
        "queries": queries,
        "lease": None,
    }
    assert stalled_queries(seen, 15) == {}


def test_the_local_stream_started_when_its_process_did_or_a_standby_when_it_took_over(lake, monkeypatch):
    """The pid file of the job names this very process: its start is the process's, from /proc."""
    import os

    from confluent_kafka import KafkaException

    from eo.runtime import monitoring
    from infra import process, streaming

    def no_broker(settings):  # status's lag needs a broker, its start time does not
        raise KafkaException("Local: Broker transport failure")

    monkeypatch.setattr(monitoring, "health", no_broker)

    service = LocalStreamService(lake)
    assert service.started_at() is None  # nothing runs
    streaming.home(lake).mkdir(parents=True, exist_ok=True)
    try:
        streaming.pid_file(lake).write_text(str(os.getpid()))
        began = process.started(os.getpid())
        assert began is not None and began <= time.time()
        assert service.started_at() == max(began, streaming.pid_file(lake).stat().st_ctime)
        status = streaming.status(lake)
        assert status.report["running"] and status.report["started_at"] == service.started_at()
        assert dict(status.rows)["started"].endswith(" s ago")

        # A standby waiting since long ago takes over when the job dies: it counts from then.
        streaming.pid_file(lake).unlink()
        streaming.pid_file(lake, "standby").write_text(str(os.getpid()))
        time.sleep(0.05)
        promoted_after = time.time()
        assert service.running()  # finds the job gone: the standby is promoted
        assert service.started_at() >= promoted_after - 0.05 > began
    finally:
        shutil.rmtree(streaming.home(lake))


def test_each_environment_gets_its_service(aws):  # noqa: F811
    assert isinstance(stream_service(load_settings("local")), LocalStreamService)
    assert isinstance(stream_service(load_settings("aws")), EmrStreamService)


class RunningRuns:
    """moto's job runs end at once; here the started stream keeps running until cancelled, and a
    cancelled run stays CANCELLING for `cancelling` listings (its driver's grace period) first."""

    def __init__(self, emr, cancelling: int = 0) -> None:
        self.emr, self.cancelled, self.cancelling = emr, [], cancelling
        self.listings_left: dict[str, int] = {}  # per cancelled run: CANCELLING listings still to come

    def state(self, run_id: str) -> str:
        if run_id not in self.cancelled:
            return "RUNNING"
        left = self.listings_left.setdefault(run_id, self.cancelling)
        self.listings_left[run_id] = max(left - 1, 0)
        return "CANCELLING" if left else "CANCELLED"

    def start_job_run(self, **kwargs):
        return self.emr.start_job_run(**kwargs)

    def get_job_run(self, **kwargs):
        return self.emr.get_job_run(**kwargs)

    def get_paginator(self, name):
        emr, state = self.emr, self.state

        class Pages:
            def paginate(self, applicationId, states):
                try:
                    runs = emr.list_job_runs(applicationId=applicationId)["jobRuns"]
                except emr.exceptions.ResourceNotFoundException:  # moto, for an application without runs yet
                    runs = []
                listed = [dict(r, state=state(r["id"])) for r in runs]
                return [{"jobRuns": [r for r in listed if r["state"] in states]}]

        return Pages()

    def cancel_job_run(self, applicationId, jobRunId):
        self.cancelled.append(jobRunId)
        return self.emr.cancel_job_run(applicationId=applicationId, jobRunId=jobRunId)


def test_on_aws_the_supervisor_starts_watches_and_cancels_the_stream_job_run(aws):  # noqa: F811
    from eo.cloud import emr_serverless

    settings = load_settings("aws")
    emr_serverless.upload(settings, aws["s3"], log=lambda _: None)
    service = EmrStreamService(settings, client=RunningRuns(aws["emr"]))
    assert not service.running()
    outcome = supervise(service, report(False), 15, True)
    assert outcome.startswith("restarted as job run ") and outcome.endswith(
        "(the stream was not running); it resumes from the checkpoint"
    )
    runs = aws["emr"].list_job_runs(applicationId=aws["app"])["jobRuns"]
    assert [r["name"] for r in runs] == ["eo-stream"]
    driver = aws["emr"].get_job_run(applicationId=aws["app"], jobRunId=runs[0]["id"])["jobRun"]["jobDriver"]
    assert driver["sparkSubmit"]["entryPoint"].endswith("jobs/stream.py")
    assert driver["sparkSubmit"]["entryPointArguments"] == ["run", "--after-dead-stream"]  # never --take-over
    assert service.running() and service.start() is None  # never two streams

    began = service.started_at()
    assert began is not None and began <= time.time()
    supervise(service, report(True, lag=5, silent_s=3600), 15, True)  # stalled: cancelled, started anew
    assert service.client.cancelled == [runs[0]["id"]]
    assert service.started_at() >= began
    assert len(aws["emr"].list_job_runs(applicationId=aws["app"])["jobRuns"]) == 2 and service.running()


def test_a_cancelling_stream_job_run_is_live_until_it_has_ended(aws, monkeypatch):  # noqa: F811
    """Cancelled by hand or by the supervisor, a run is CANCELLING while its driver stops, and may
    still commit: nothing starts beside it, and a restart waits for it to end."""
    from eo.cloud import emr_serverless

    settings = load_settings("aws")
    emr_serverless.upload(settings, aws["s3"], log=lambda _: None)
    runs = RunningRuns(aws["emr"], cancelling=3)
    service = EmrStreamService(settings, client=runs)
    monkeypatch.setattr(service, "POLL_SECONDS", 0.0)
    service.start()
    (old,) = service.live_runs()
    runs.cancelled.append(old)  # cancelled in the console: CANCELLING for the next 3 listings
    assert service.live_states() == {old: "CANCELLING"}
    assert service.running() and service.start() is None  # live: no second run beside it
    outcome = supervise(service, report(True, lag=5, silent_s=3600), 15, True)  # stalled: kill, then start
    assert outcome.startswith("restarted as job run ")
    assert runs.cancelled == [old]  # not cancelled twice: kill waited for it to end
    new = service.live_runs()
    assert len(new) == 1 and new != [old]

    monkeypatch.setattr(service, "CANCEL_WAIT_SECONDS", 0.0)
    runs.cancelling = 100  # a run that takes longer than kill waits
    with pytest.raises(StillCancelling, match="still cancelling: nothing starts beside them"):
        supervise(service, report(True, lag=5, silent_s=3600), 15, True)
    assert runs.cancelled == [old, new[0]]
    assert service.live_states() == {new[0]: "CANCELLING"}  # and nothing was started beside it
    assert len(aws["emr"].list_job_runs(applicationId=aws["app"])["jobRuns"]) == 2


def test_by_hand_the_stream_starts_once_as_the_service_the_supervisor_watches(monkeypatch, capsys):
    import ops.stream_service as module

    service = FakeService(started="job run 00abc")
    monkeypatch.setattr(module, "stream_service", lambda settings: service)
    assert module.main(["start"]) == 0 and module.main(["kill"]) == 0
    assert service.calls == ["start", "kill"]
    assert capsys.readouterr().out.splitlines() == ["stream started: job run 00abc", "stream killed: pid 6"]
    service.started = None
    module.main(["start"])
    assert "already running" in capsys.readouterr().out


def test_on_aws_the_supervisor_waits_beside_a_reset_then_starts_the_stream_job_run(aws, monkeypatch):  # noqa: F811
    """A reset beside the supervisor in the AWS environment (moto): the reset's hold in DynamoDB,
    taken as ops.reset takes it, is read as the Airflow worker reads it; no job run is started
    until it ends, and then one that never fences a reset."""
    from eo.cloud import emr_serverless
    from eo.cloud.outputs import LOG_STORE_KEYS
    from eo.runtime.live_tables import holding_live_tables
    from ops.stream_service import lease_holder

    keys = [LOG_STORE_KEYS["hash"], LOG_STORE_KEYS["range"]]
    dynamodb = emr_serverless.aws_client("dynamodb", "eu-west-1")
    dynamodb.create_table(
        TableName="eo-delta-log",
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": k, "AttributeType": "S"} for k in keys],
        KeySchema=[{"AttributeName": k, "KeyType": t} for k, t in zip(keys, ("HASH", "RANGE"), strict=True)],
    )
    settings = load_settings("aws")
    emr_serverless.upload(settings, aws["s3"], log=lambda _: None)
    service = EmrStreamService(settings, client=RunningRuns(aws["emr"]))
    queries = {"events": {"lag": 0, "seconds_since_commit": None}}
    with holding_live_tables(settings, "a reset") as fence:
        seen = observe(service, queries, lease=lease_holder(settings))
        outcome = supervise(service, seen, 15, True)
        assert outcome.startswith("waiting: a reset on ") and f"epoch {fence.epoch}" in outcome, outcome
        assert not service.running()  # no job run started beside the reset
    outcome = supervise(service, observe(service, queries, lease=lease_holder(settings)), 15, True)
    assert outcome.startswith("restarted as job run "), outcome
    (run,) = aws["emr"].list_job_runs(applicationId=aws["app"])["jobRuns"]
    driver = aws["emr"].get_job_run(applicationId=aws["app"], jobRunId=run["id"])["jobRun"]["jobDriver"]
    assert driver["sparkSubmit"]["entryPointArguments"] == ["run", "--after-dead-stream"]
