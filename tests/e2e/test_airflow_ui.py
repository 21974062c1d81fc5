"""End to end through the Airflow UI in a real browser: start Airflow, log in, see the four DAGs,
backfill two days of rebuild_derived from the Trigger dialog, wait for both runs to succeed,
and keep a screenshot under reports/e2e/. Everything started here is stopped here."""

import datetime as dt
import json
import time
import urllib.request

import pytest

from infra.airflow import USER, AirflowService
from jobs.config import REPO_ROOT
from jobs.tables import CAMPAIGN_MINUTE_METRICS
from tests.conftest import settings_env
from tests.e2e.airflow_ui import CHROMIUM, CHROMIUM_ARGS, dag_ids_listed, login, trigger_backfill
from tests.helpers import sorted_rows

pytestmark = pytest.mark.integration

PORT = 18080
DAYS = (dt.datetime(2026, 11, 5), dt.datetime(2026, 11, 6))
SCREENSHOT = REPO_ROOT / "reports" / "e2e" / "airflow-backfill.png"


@pytest.fixture(scope="module")
def airflow(two_day_lake, postgres, tmp_path_factory):
    """Airflow with its metadata in PostgreSQL: on SQLite, the scheduler running the scheduled
    run (the backfill dialog unpauses the DAG) and the API server creating the backfill raced for
    the one writer; the backfill answered 503 and the scheduler died (StaleDataError)."""
    import psycopg

    server = postgres.dsn().rsplit("/", 1)[0]
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS airflow_e2e WITH (FORCE)")
        conn.execute("CREATE DATABASE airflow_e2e")
    with pytest.MonkeyPatch.context() as env:
        for key, value in settings_env(two_day_lake).items():
            env.setenv(key, value)
        env.setenv("EO_AIRFLOW_DB_URL", server.replace("postgresql://", "postgresql+psycopg://", 1) + "/airflow_e2e")
        service = AirflowService(tmp_path_factory.mktemp("airflow-home"), PORT)
        try:
            service.start()
            yield service
        finally:
            service.stop()
    assert not any(service.running().values()), "an Airflow component outlived the test"


def api(service, path: str, token: str):
    request = urllib.request.Request(f"{service.url}{path}", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def token(service) -> str:
    body = json.dumps({"username": USER, "password": service.password()}).encode()
    request = urllib.request.Request(
        f"{service.url}/auth/token", data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)["access_token"]


def wait_for_backfill(service, timeout: float = 900) -> list[dict]:
    deadline, bearer = time.monotonic() + timeout, token(service)
    while time.monotonic() < deadline:
        runs = api(service, "/api/v2/dags/rebuild_derived/dagRuns?run_type=backfill", bearer)["dag_runs"]
        states = sorted(r["state"] for r in runs)
        if len(runs) == 2 and states == ["success", "success"]:
            return runs
        assert "failed" not in states, f"a backfill run failed: {runs}"
        time.sleep(5)
    raise AssertionError(f"backfill runs not done after {timeout} s: {states}")


def test_backfill_two_days_from_the_ui(spark, airflow, two_day_lake):
    from playwright.sync_api import sync_playwright

    started = time.monotonic()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            login(page, airflow.url, USER, airflow.password())
            listed = dag_ids_listed(page, airflow.url)
            assert {"rebuild_derived", "verify_agreement", "stream_supervisor", "lake_maintenance"} <= set(listed)
            trigger_backfill(page, airflow.url, "rebuild_derived", *DAYS)
            runs = wait_for_backfill(airflow)
            page.goto(f"{airflow.url}/dags/rebuild_derived/runs")
            page.get_by_text("Backfill").first.wait_for()
            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOT))
        finally:
            browser.close()
    intervals = sorted(r["data_interval_start"][:10] for r in runs)
    assert intervals == ["2026-11-05", "2026-11-06"]
    rebuilt = sorted_rows(spark, two_day_lake, CAMPAIGN_MINUTE_METRICS, "rebuild")
    assert {r.window_date.isoformat() for r in rebuilt} == {"2026-11-05", "2026-11-06"}
    print(f"browser test: {time.monotonic() - started:.0f} s after Airflow start; screenshot {SCREENSHOT}")
