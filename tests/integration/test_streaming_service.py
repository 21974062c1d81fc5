"""The local streaming service's pid files: a standby that outlives the job becomes the job.

Integration: real (stand-in) processes, whose pids the service reads and checks."""

from __future__ import annotations

import subprocess

import pytest

from infra import streaming

pytestmark = pytest.mark.integration


@pytest.fixture
def service(lake, monkeypatch, tmp_path):
    monkeypatch.setattr(streaming, "SERVICES_DIR", tmp_path / "services")
    # A regression that starts the job must fail here, not spark-submit a real driver.
    monkeypatch.setattr(streaming, "_spawn", lambda *args, **kwargs: pytest.fail(f"spawned a job: {args}"))
    streaming.home(lake).mkdir(parents=True)
    procs: list[subprocess.Popen] = []

    def spawn(role: str) -> subprocess.Popen:
        proc = subprocess.Popen(["sleep", "60"])
        procs.append(proc)
        streaming.pid_file(lake, role).write_text(str(proc.pid))
        return proc

    try:
        yield lake, spawn
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def test_a_standby_is_promoted_when_the_job_dies(service):
    settings, spawn = service
    job, standby = spawn("streaming"), spawn("standby")
    assert streaming.running(settings) and streaming.standing_by(settings)
    job.kill()
    job.wait()
    assert streaming.running(settings), "the standby carrying on counts as the job running"
    assert not streaming.standing_by(settings), "no standby is left once it has taken over"
    assert streaming.pid_file(settings).read_text() == str(standby.pid)
    assert streaming.start(settings) is None, "a second job must not be started next to the promoted one"


def test_without_a_standby_a_dead_job_is_not_running(service):
    settings, spawn = service
    job = spawn("streaming")
    job.kill()
    job.wait()
    assert not streaming.running(settings) and not streaming.standing_by(settings)
