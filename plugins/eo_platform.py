"""This platform's Airflow plugin (loaded from plugins/, see infra/airflow.py):

- every run of rebuild_derived and verify_agreement gets a note saying which event time it
  covers ("rebuilds 2026-11-20 into rebuild"), shown in the runs list and the run's page,
  unless whoever triggered it wrote one;
- the Great Expectations Data Docs are served by Airflow's API server at /data-docs/
  (and linked as "Data Docs" in the UI's navigation), so task logs can link to them.
"""

from __future__ import annotations

import logging
from typing import ClassVar

from airflow.listeners import hookimpl
from airflow.plugins_manager import AirflowPlugin

log = logging.getLogger(__name__)


class RunNotes:
    """A listener: the scheduler calls it in its own session when a run starts."""

    @hookimpl
    def on_dag_run_running(self, dag_run, msg: str) -> None:
        if dag_run.note:
            return
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
            log.exception("could not describe run %s", dag_run.run_id)
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


class EffectivelyOncePlugin(AirflowPlugin):
    name = "effectively_once"
    listeners: ClassVar[list] = [RunNotes()]
    fastapi_apps: ClassVar[list] = [{"app": data_docs_app(), "url_prefix": "/data-docs", "name": "Data Docs"}]
    external_views: ClassVar[list] = [
        {"name": "Data Docs", "href": "/data-docs/index.html", "url_route": "data-docs", "destination": "nav"}
    ]
