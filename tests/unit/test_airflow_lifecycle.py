"""What Airflow's lifecycle may touch (infra/airflow.py): the environment a process started outside
Airflow gets, the tasks a dead scheduler took with it as Airflow names them, and where an
operator reads about them (`make airflow-status`). With real processes: tests/integration/
test_airflow_lifecycle.py."""

from __future__ import annotations

import json
import os
import re
import time
from types import SimpleNamespace

import pytest

from infra import airflow, airflow_status, airflow_tasks, process

pytestmark = pytest.mark.unit

TI = "0199a0b2-7c1e-7d2a-9f00-5b6c7d8e9f10"


def airflow_log(home: str, dag_id: str, run_id: str, task_id: str, try_number: int, map_index: int = -1) -> str:
    """Where Airflow writes a task's log: its own template, rendered as it renders it."""
    import jinja2
    from airflow.configuration import conf

    ti = SimpleNamespace(dag_id=dag_id, run_id=run_id, task_id=task_id, map_index=map_index, try_number=try_number)
    name = jinja2.Template(conf.get("logging", "log_filename_template")).render(ti=ti, try_number=try_number)
    return f"{home}/logs/{name}"


def test_a_process_started_outside_airflow_carries_none_of_its_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("EO_AIRFLOW_DB", "sqlite")
    service = airflow.AirflowService(tmp_path)
    inside = {
        **service.env(),  # what every component carries, and so every task
        "AIRFLOW_CTX_DAG_ID": "stream_supervisor",  # a task's context
        "AIRFLOW_CTX_TASK_ID": "restart_if_needed",
        "AIRFLOW_CONN_SPARK_DEFAULT": "spark://local",
        "_AIRFLOW_PROCESS_CONTEXT": "client",  # the task supervisor's own
        "__AIRFLOW_SUPERVISOR_FD": "7",
        "EO_ENV": "local",  # the platform's settings go on
        "EO_LAKE_ROOT": "/lake",
        "EO_AIRFLOW_PORT": "8080",  # a knob of infra.airflow, not a mark of its processes
    }
    assert inside[airflow.MARK] == str(tmp_path) and inside["AIRFLOW_HOME"] == str(tmp_path)
    outside = airflow.outside_airflow(inside)
    assert airflow.MARK not in outside
    assert not [name for name in outside if name.lstrip("_").startswith("AIRFLOW")]
    assert {k: outside[k] for k in ("EO_ENV", "EO_LAKE_ROOT", "EO_AIRFLOW_PORT")} == {
        "EO_ENV": "local",
        "EO_LAKE_ROOT": "/lake",
        "EO_AIRFLOW_PORT": "8080",
    }
    assert outside["PATH"] == inside["PATH"]


def test_a_task_is_named_from_airflows_titles_and_the_log_its_worker_writes():
    from airflow.executors.local_executor import _get_executor_process_title_prefix

    worker = f"{_get_executor_process_title_prefix(None)} {TI}"  # LocalExecutor's, for the task's supervisor
    log = airflow_log("/h", "rebuild_derived", "backfill__2026-11-21T00:00:00+00:00", "rebuild", 2)
    assert airflow_tasks.task_of(worker, ["/dev/null", "/h/scheduler.log", log]) == {
        "id": TI,
        "dag_id": "rebuild_derived",
        "run_id": "backfill__2026-11-21T00:00:00+00:00",
        "task_id": "rebuild",
        "try_number": 2,
        "log": log,
    }
    mapped = airflow_log("/h", "d", "manual__x", "t", 1, map_index=3)
    assert airflow_tasks.task_of(worker, [mapped])["map_index"] == 3
    assert airflow_tasks.task_of(f"airflow worker -- {TI}", []) == {"id": TI}  # the task's own process
    for other in (
        f"{_get_executor_process_title_prefix(None)} <idle>",
        "airflow scheduler",
        "airflow serve-logs",
        "/venv/bin/python /venv/bin/airflow scheduler",
    ):
        assert airflow_tasks.task_of(other, [log]) is None


def test_airflow_status_says_which_tasks_a_restart_took_with_it(tmp_path, monkeypatch):
    monkeypatch.setenv("EO_AIRFLOW_DB", "sqlite")
    service = airflow.AirflowService(tmp_path, port=18998)  # nothing listens there
    rebuild = {
        "id": TI,
        "dag_id": "rebuild_derived",
        "run_id": "backfill__2026-11-21T00:00:00+00:00",
        "task_id": "rebuild",
        "try_number": 1,
        "started_at": "2026-11-26T02:35:00Z",
        "ran_seconds": 1500.0,
    }
    verify = {**rebuild, "id": TI[:-1] + "1", "dag_id": "verify_agreement", "task_id": "verify", "ran_seconds": 1980}
    unnamed = {"id": TI[:-1] + "2"}  # its worker's log not found: the task instance's id
    restarts = [
        {"component": "triggerer", "at": "2026-11-26T02:00:00Z", "pid": 40},
        {"component": "scheduler", "at": "2026-11-26T03:00:00Z", "pid": 41, "tasks": [rebuild, verify, unnamed]},
    ]
    service.restarts_file.write_text("".join(json.dumps(r) + "\n" for r in restarts))
    status = airflow_status.status(service, None)
    rows = dict(status.rows)
    assert rows["restarts"].startswith("2, last scheduler at 2026-11-26T03:00:00Z")
    assert rows["tasks lost"] == (
        "3 when the scheduler died before 2026-11-26T03:00:00Z, run again from the start: "
        "rebuild_derived.rebuild (run backfill__2026-11-21T00:00:00+00:00, try 1, ran 25 min 0 s); "
        "verify_agreement.verify (run backfill__2026-11-21T00:00:00+00:00, try 1, ran 33 min 0 s); "
        f"task instance {TI[:-1]}2"
    )
    lost = status.report["tasks_lost"]
    assert [(t["component"], t["at"], t["id"]) for t in lost] == [
        ("scheduler", "2026-11-26T03:00:00Z", t["id"]) for t in (rebuild, verify, unnamed)
    ]


def test_this_process_as_proc_shows_it():
    """Start time, title and open files of a process, read from /proc (this very process)."""
    import psutil

    me = os.getpid()
    assert process.started(me) == pytest.approx(psutil.Process(me).create_time(), abs=0.02)
    assert process.started(me) <= time.time()
    assert process.title(me) == " ".join(psutil.Process(me).cmdline())
    assert process.started(2**22 + 1) is None and process.title(2**22 + 1) == ""
    with open(__file__) as held:
        assert os.path.realpath(held.name) in process.open_files(me)
    found = process.titled(re.compile(re.escape(process.title(me))))
    assert me in found


def test_commands_after_a_start_find_the_port_and_database_it_was_started_with(tmp_path, monkeypatch):
    """`make airflow` with another port and PostgreSQL port, then `make airflow-status` without
    them: the same URL, the same database server, never the defaults (8080, 5432)."""
    for name in airflow.STARTED_WITH:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("EO_AIRFLOW_PORT", "18997")
    monkeypatch.setenv("EO_PG_PORT", "15999")
    airflow.AirflowService.default(home=tmp_path).record_start()  # what start does once prepared

    monkeypatch.delenv("EO_AIRFLOW_PORT")
    monkeypatch.delenv("EO_PG_PORT")
    later = airflow.AirflowService.default(home=tmp_path)
    assert later.url == "http://127.0.0.1:18997"
    rows = dict(airflow_status.status(later, None).rows)
    assert rows["url"] == "http://127.0.0.1:18997" and rows["Data Docs"] == "http://127.0.0.1:18997/data-docs/"
    assert rows["metadata"] == "PostgreSQL at 127.0.0.1:15999/airflow"
    assert later.postgres().port == 15999 and dict(later.knobs)["EO_PG_PORT"] == "15999"  # env() passes them on
    assert airflow.AirflowService.default(port=18996, home=tmp_path).port == 18996  # asked for now: wins
    monkeypatch.setenv("EO_AIRFLOW_PORT", "18995")
    assert airflow.AirflowService.default(home=tmp_path).port == 18995
    assert airflow.AirflowService.default(home=tmp_path / "never-started").port == 18995
    monkeypatch.delenv("EO_AIRFLOW_PORT")
    assert airflow.AirflowService.default(home=tmp_path / "never-started").url == "http://127.0.0.1:8080"
