"""Airflow's lifecycle leaves the stream alone, with real processes shaped as Airflow's own.

A scheduler (its pid file, Airflow's environment), a LocalExecutor worker in its process group
(Airflow's title for it, writing the task's log), the task's own process in a group of its own (as
Airflow's supervisor puts it) running a Spark job and, as the stream_supervisor's task does,
starting the stream through infra/streaming.py's `_spawn` (spark-submit replaced by a sleeper: the
test is about processes, not Spark). Then the scheduler is SIGKILLed, the watchdog's `revive`
runs, and `make airflow-stop`'s `stop`."""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from infra import airflow, airflow_status, process, streaming
from tests.conftest import settings_env

pytestmark = pytest.mark.integration

TASK_ID = str(uuid.uuid4())  # a task instance's id, as Airflow 3 makes them (uuid7: the same form)
NEXT_TASK_ID = str(uuid.uuid4())  # the one the restarted scheduler runs

FAKE = textwrap.dedent(
    """
    import os, subprocess, sys, time
    from pathlib import Path
    from setproctitle import setproctitle

    role, ti = sys.argv[1], os.environ["FAKE_TI"]
    me = [sys.executable, __file__]
    if role == "scheduler":  # its LocalExecutor worker stays in its process group
        setproctitle("airflow scheduler")
        subprocess.Popen([*me, "worker"])
    elif role == "worker":  # writes the task's log; the task's process gets a group of its own
        setproctitle(f"{os.environ['FAKE_WORKER_TITLE']} {ti}")
        run = "manual__1" if os.environ["FAKE_STREAM"] else "manual__2"
        log = Path(os.environ["AIRFLOW_HOME"]) / f"logs/dag_id=stream_supervisor/run_id={run}"
        log = log / "task_id=restart_if_needed/attempt=1.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        held = open(log, "ab")
        subprocess.Popen([*me, "task"], process_group=0)
    elif role == "task":  # a Spark job in its group, and the stream, started as the supervisor does
        setproctitle(f"airflow worker -- {ti}")
        subprocess.Popen(["sleep", "120"])
        if os.environ.get("FAKE_STREAM"):
            from eo.runtime.config import load_settings
            from infra import streaming

            streaming.submit_command = lambda *args, **kwargs: [sys.executable, "-c", "import time; time.sleep(120)"]
            streaming._spawn(load_settings(), "streaming", [])
    time.sleep(120)
    """
)


class Watchdog(airflow.AirflowService):
    """This Airflow, its components started as sleepers and its scheduler as the fake one, rather
    than Airflow's binaries."""

    def _spawn(self, component: str, env: dict[str, str]) -> int:
        cmd = [sys.executable, "-c", "import time; time.sleep(120)"]
        if component == "scheduler":
            cmd = [sys.executable, str(self.home.parent / "fake_airflow.py"), "scheduler"]
            env = {**env, "FAKE_TI": NEXT_TASK_ID, "FAKE_STREAM": ""}
        return process.spawn(cmd, self.home / f"{component}.log", self.pid_file(component), env=env)


def title(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


def titled(wanted: str) -> list[int]:
    pids = [int(path.parent.name) for path in Path("/proc").glob("[0-9]*/cmdline")]
    return [pid for pid in pids if title(pid) == wanted and process.alive(pid)]


def task_processes(task_id: str) -> tuple[int, int]:
    """The task's own process, once it runs, and the Spark job in its process group."""
    process.wait_for(lambda: len(titled(f"airflow worker -- {task_id}")) == 1, 20, f"task {task_id}")
    (task,) = titled(f"airflow worker -- {task_id}")
    process.wait_for(lambda: len(process.group(task)) == 2, 10, "the task and its Spark job")
    (job,) = set(process.group(task)) - {task}
    return task, job


def environ(pid: int) -> dict[str, str]:
    pairs = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(p.decode().split("=", 1) for p in pairs if b"=" in p)


def test_airflow_restarts_and_stops_leave_the_stream_alone_and_say_which_tasks_were_lost(tmp_path, lake, monkeypatch):
    from airflow.executors.local_executor import _get_executor_process_title_prefix

    fake_env = {"EO_AIRFLOW_DB": "sqlite", "FAKE_TI": TASK_ID, "FAKE_STREAM": "1"}
    fake_env["FAKE_WORKER_TITLE"] = _get_executor_process_title_prefix(None)  # Airflow's own
    for key, value in {**settings_env(lake), **fake_env}.items():
        monkeypatch.setenv(key, value)
    fake = tmp_path / "fake_airflow.py"
    fake.write_text(FAKE)
    service = Watchdog(tmp_path / "airflow", port=18999)
    service.home.mkdir()
    env = service.env()
    for component in set(airflow.COMPONENTS) - {"scheduler"}:
        service._spawn(component, env)
    scheduler = process.spawn(
        [sys.executable, str(fake), "scheduler"], tmp_path / "scheduler.log", service.pid_file("scheduler"), env=env
    )  # with the task that starts the stream
    # An operator's shell with AIRFLOW_HOME exported runs something: not Airflow's to stop.
    shell = process.spawn(
        ["sleep", "120"], tmp_path / "shell.log", tmp_path / "shell.pid", env={"AIRFLOW_HOME": str(service.home)}
    )
    stream_pid = streaming.pid_file(lake)
    try:
        process.wait_for(lambda: process.alive(process.read_pid(stream_pid)), 30, "the stream started by the task")
        stream = process.read_pid(stream_pid)
        process.wait_for(lambda: len(process.group(scheduler)) == 2, 10, "the scheduler and its worker")
        (worker,) = set(process.group(scheduler)) - {scheduler}
        task, spark_job = task_processes(TASK_ID)

        # The stream: a session of its own, none of Airflow's processes its parent, none of its environment.
        assert os.getsid(stream) == stream
        assert int(Path(f"/proc/{stream}/stat").read_text().rsplit(")", 1)[1].split()[1]) not in {task, worker}
        assert "AIRFLOW_HOME" in environ(spark_job)  # what the task started carries Airflow's variables
        assert not [k for k in environ(stream) if k.lstrip("_").startswith("AIRFLOW") or k == airflow.MARK]
        assert environ(stream)["EO_TOPIC"] == lake.topic  # the caller's own settings go with it

        os.kill(scheduler, signal.SIGKILL)
        process.wait_for(lambda: not process.alive(scheduler), 10, "the scheduler dies")
        assert service.revive() == ["scheduler"]
        (restart,) = service.restarts()
        (lost,) = restart["tasks"]
        assert {k: lost[k] for k in ("id", "dag_id", "run_id", "task_id", "try_number")} == {
            "id": TASK_ID,
            "dag_id": "stream_supervisor",
            "run_id": "manual__1",
            "task_id": "restart_if_needed",
            "try_number": 1,
        }
        assert 0 <= lost["ran_seconds"] < 60
        # What it left behind is stopped, the task's own process and its Spark job included: they
        # would run on beside the task's next try. The stream is not the task's: it runs on.
        assert not any(process.alive(p) for p in (worker, task, spark_job))
        assert process.alive(stream)
        rows = dict(airflow_status.status(service, None).rows)
        assert "stream_supervisor.restart_if_needed (run manual__1, try 1, ran 0 min" in rows["tasks lost"]

        # make airflow-stop while the restarted scheduler runs a task: the task's processes stop
        # (retitled by Airflow, they no longer show its mark), the stream and the shell's run on.
        next_task, next_job = task_processes(NEXT_TASK_ID)
        stopped = service.stop()
        assert sorted(stopped) == sorted(airflow.COMPONENTS)
        assert service.leftovers() == [] and not any(process.alive(p) for p in (next_task, next_job))
        assert process.alive(stream) and process.alive(shell)
    finally:  # whatever the code under test left; every fake process also ends by itself in 2 min
        service.stop()
        for pid in [p for p in (process.read_pid(stream_pid), shell) if process.alive(p)]:
            os.killpg(pid, signal.SIGKILL)
        for _ in range(10):
            for pid in titled(f"airflow worker -- {TASK_ID}") + titled(f"airflow worker -- {NEXT_TASK_ID}"):
                os.killpg(pid, signal.SIGKILL)  # the tasks' own groups
            time.sleep(0.1)
        for pid in service.leftovers():
            os.kill(pid, signal.SIGKILL)
        streaming.pid_file(lake).unlink(missing_ok=True)
        if streaming.home(lake).exists():
            for path in streaming.home(lake).iterdir():
                path.unlink()
            streaming.home(lake).rmdir()
