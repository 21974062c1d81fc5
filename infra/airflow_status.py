"""What `make airflow-status` says of the Airflow on a home (infra/airflow.py's service)."""

from __future__ import annotations

import argparse

from infra.airflow import USER, AirflowService
from infra.airflow_tasks import describe_task, lost_tasks
from infra.status import Status


def status(airflow: AirflowService, args: argparse.Namespace | None) -> Status:
    """`make airflow-status`: each component, the database, the login, the Data Docs, and the
    restarts the watchdog made with the tasks a dead scheduler took with it."""
    running = airflow.running()
    up = all(running.values()) and airflow.healthy()
    state = "running" if up else ("partly running" if any(running.values()) else "stopped")
    database = airflow.metadata()
    restarts = airflow.restarts()
    login = f"{USER} / {airflow.password()}" if (airflow.home / "secrets.json").exists() else "set on first start"
    report = {
        "service": "airflow",
        "state": state,
        "url": airflow.url,
        "login": login,
        "database": database,
        "healthy": up,
        "components": running,
        "watchdog": airflow.watching(),
        "restarts": restarts,
        "tasks_lost": lost_tasks(restarts),
    }
    report["data_docs"] = f"{airflow.url}/data-docs/"
    report["started_with"] = {k: v for k, v in airflow.knobs if k != "EO_AIRFLOW_DB_URL"}  # no password
    rows = [("Airflow", state), ("url", airflow.url), ("login", report["login"]), ("metadata", database)]
    rows.append(("Data Docs", report["data_docs"]))
    rows += [(name, "running" if alive else "stopped") for name, alive in running.items()]
    rows.append(("watchdog", "restarts a component that dies" if report["watchdog"] else "stopped"))
    if restarts:
        last = restarts[-1]
        rows.append(
            ("restarts", f"{len(restarts)}, last {last['component']} at {last['at']} ({airflow.restarts_file})")
        )
    for restart in [r for r in restarts if r.get("tasks")][-3:]:
        tasks = restart["tasks"]
        rows.append(
            (
                "tasks lost",
                f"{len(tasks)} when the {restart['component']} died before {restart['at']}, run again from "
                f"the start: {'; '.join(describe_task(t) for t in tasks)}",
            )
        )
    if not up:
        rows.append(("to start it", "make airflow"))
    return Status(up, report, rows)
