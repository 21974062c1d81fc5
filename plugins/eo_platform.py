"""This platform's Airflow plugin (loaded from plugins/, see infra/airflow.py):

- every run of rebuild_derived and verify_agreement gets a note saying which event time it
  covers ("rebuilds 2026-11-20 into rebuild"), shown on the run's page (the run id names the
  day in the runs list: eo_timetables.py), unless whoever triggered it wrote one;
- a run that fails says so in its note, with the tasks that failed ("... · FAILED in
  publish_data_docs: see its last log line"), so a red run stays visible in the runs list after
  later green runs of other days;
- a stream_supervisor run that started the stream again, or waited for a reset or a rebuild,
  says so in its note ("restarted the stream: restarted as pid 4242 (...)"); a healthy run has
  none, so the restarts stand out (its `stream_restarted` task is green only in those runs);
- the Great Expectations Data Docs are served by Airflow's API server at /data-docs/
  (and linked as "Data Docs" in the UI's navigation), so task logs can link to them;
- the components the watchdog found dead and started again (infra/airflow.py) are listed at
  /platform/restarts ("Component restarts" in the navigation), each with the running tasks it
  took with it (a scheduler's), which Airflow runs again from the start.
"""

from __future__ import annotations

import logging
from typing import ClassVar

from airflow.listeners import hookimpl
from airflow.plugins_manager import AirflowPlugin

log = logging.getLogger(__name__)


def failed_note(note: str | None, failed_tasks: list[str]) -> str:
    """The note of a run that failed: what it covers, then where to read why."""
    where = f"FAILED in {', '.join(sorted(failed_tasks))}: see its last log line" if failed_tasks else "FAILED"
    return f"{note} · {where}" if note else where


def supervisor_note(outcome: str | None) -> str | None:
    """The note of a stream_supervisor run from restart_if_needed's line: a restart or a wait is
    worth a note, a healthy stream is not."""
    from ops.stream_service import restarted

    if restarted(outcome):
        return f"restarted the stream: {outcome}"
    if outcome and outcome.startswith("waiting"):
        return f"did not restart the stream, {outcome}"
    return None


def _run_session(dag_run):
    """The session the run is bound to: in the scheduler, the scheduler's own."""
    from sqlalchemy.orm import object_session

    return object_session(dag_run)


def _supervisor_outcome(dag_run) -> str | None:
    """restart_if_needed's line (its XCom), read in the scheduler's own session, the one the run is
    bound to. Never in a session of Airflow's making (`provide_session`'s default): in the
    scheduler that is the same thread-scoped session, which it commits and closes, detaching every
    object of the scheduler's loop (its next step then raises DetachedInstanceError, the scheduler
    dies, and again at each restart, as long as the run is there)."""
    session = _run_session(dag_run)
    if session is None:
        return None
    ti = dag_run.get_task_instance("restart_if_needed", session=session)
    return None if ti is None else ti.xcom_pull(task_ids="restart_if_needed", session=session)


class RunNotes:
    """A listener: the scheduler calls it in its own session when a run starts, succeeds or fails."""

    @hookimpl
    def on_dag_run_success(self, dag_run, msg: str) -> None:
        if dag_run.dag_id != "stream_supervisor" or dag_run.note:
            return
        run_id = dag_run.run_id  # named in the log below without touching the run again
        try:
            note = supervisor_note(_supervisor_outcome(dag_run))
        except Exception:  # a note is never worth a scheduler error
            log.exception("could not describe run %s", run_id)
            return
        if note:
            dag_run.note = note

    @hookimpl
    def on_dag_run_failed(self, dag_run, msg: str) -> None:
        if "FAILED" in (dag_run.note or ""):
            return
        run_id = dag_run.run_id
        try:
            failed = [ti.task_id for ti in dag_run.task_instances if ti.state == "failed"]
            if dag_run.dag_id == "stream_supervisor" and not dag_run.note:  # a restart, then lag: both
                dag_run.note = supervisor_note(_supervisor_outcome(dag_run))
            dag_run.note = failed_note(dag_run.note, failed)
        except Exception:  # a note is never worth a scheduler error
            log.exception("could not mark run %s as failed in its note", run_id)

    @hookimpl
    def on_dag_run_running(self, dag_run, msg: str) -> None:
        if dag_run.note:
            return
        run_id = dag_run.run_id
        try:
            from eo.core.intervals import run_scope
            from eo.runtime.quality.ledger import scope_inputs

            rebuilt = scope_inputs(dag_run.dag_id, dag_run.consumed_asset_events)
            note = run_scope(
                dag_run.dag_id,
                dag_run.conf,
                dag_run.data_interval_start,
                dag_run.data_interval_end,
                rebuilt,
                dag_run.logical_date or dag_run.run_after,
            )
        except Exception:  # a note is never worth a scheduler error
            log.exception("could not describe run %s", run_id)
            return
        if note:
            dag_run.note = note


def data_docs_app():
    """Static files from the local Data Docs copy (none when the reports live in a bucket)."""
    from fastapi import FastAPI
    from fastapi.staticfiles import StaticFiles

    from eo.runtime.config import load_settings
    from eo.runtime.environment import environment
    from eo.runtime.quality.site import data_docs_root

    settings = load_settings()
    app = FastAPI(title="Data Docs")
    if environment(settings).local_reports is not None:
        app.mount("/", StaticFiles(directory=data_docs_root(settings), html=True, check_dir=False))
    return app


def restarts_page(restarts: list[dict]) -> str:
    """An HTML table of the watchdog's restarts, newest first, each with the running tasks the
    component took with it (infra/airflow.py `taken_with`): Airflow runs those again from the start."""
    from html import escape

    from infra.airflow_tasks import describe_task

    def tasks(restart: dict) -> str:
        taken = restart.get("tasks") or []
        if not taken:
            return "none"
        items = "".join(f"<li>{escape(describe_task(t))}</li>" for t in taken)
        return f"<b>{len(taken)} lost, run again from the start:</b><ul>{items}</ul>"

    rows = "".join(
        f"<tr><td>{escape(str(r.get('at')))}</td><td>{escape(str(r.get('component')))}</td>"
        f"<td>{escape(str(r.get('pid')))}</td><td>{tasks(r)}</td></tr>"
        for r in reversed(restarts)
    )
    lost = sum(len(r.get("tasks") or []) for r in restarts)
    body = (
        "<table border=1 cellpadding=4><tr><th>at (UTC)</th><th>component</th><th>new pid</th>"
        f"<th>running tasks it took with it</th></tr>{rows}</table>"
        if restarts
        else "<p>No component has died since Airflow was started.</p>"
    )
    summary = f"{len(restarts)} restart(s), {lost} running task(s) lost with them"
    return (
        "<html><head><title>Component restarts</title></head><body style='font-family:sans-serif'>"
        "<h2>Airflow components the watchdog started again</h2>"
        f"<p>{summary}; make airflow-status shows the same.</p>{body}</body></html>"
    )


def platform_app():
    """Pages about the platform's own Airflow: its components' restarts."""
    import json
    import os
    from pathlib import Path

    from fastapi import FastAPI
    from fastapi.responses import HTMLResponse

    app = FastAPI(title="Platform")

    @app.get("/restarts", response_class=HTMLResponse)
    def restarts() -> str:
        log = Path(os.environ.get("AIRFLOW_HOME", ".")) / "restarts.jsonl"
        lines = log.read_text().splitlines() if log.exists() else []
        return restarts_page([json.loads(line) for line in lines if line.strip()])

    return app


class EffectivelyOncePlugin(AirflowPlugin):
    name = "effectively_once"
    listeners: ClassVar[list] = [RunNotes()]
    fastapi_apps: ClassVar[list] = [
        {"app": data_docs_app(), "url_prefix": "/data-docs", "name": "Data Docs"},
        {"app": platform_app(), "url_prefix": "/platform", "name": "Platform"},
    ]
    external_views: ClassVar[list] = [
        {"name": "Data Docs", "href": "/data-docs/index.html", "url_route": "data-docs", "destination": "nav"},
        {"name": "Component restarts", "href": "/platform/restarts", "destination": "nav"},
    ]
