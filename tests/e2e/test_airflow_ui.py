"""The day of a new user, in a real browser against a real Airflow: trigger a rebuild of a day
(its logical date), let verification run on non-adjacent days, backfill two days of which one
already has a run while a second backfill (lake maintenance) runs beside it (each runs list
names the day each run covers in its run id), then tamper with one gold row and read
the failure in the Data Docs (the red run says so in its note); verify a day nobody rebuilt, typed
as a plain day (skipped, not failed), try to rebuild a day in the future (refused), rebuild into
the live tables while the stream holds them (refused at once, not retried, the task's error the
one line; `make stream-status` names the holder's pid and epoch), let the supervisor restart the
dead stream (its run says so in its note) and kill the scheduler (the
watchdog starts it again, and "Component restarts" lists it). Each step asserts what the UI shows
and keeps a screenshot under reports/e2e/. Each step is a test of its own, in this file's order, on
one Airflow and one browser (module fixtures): a step that fails no longer hides the steps after it,
and a step that needs what an earlier one made is skipped naming it. Everything started here is
stopped here."""

import datetime as dt
import json
import os
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from delta.tables import DeltaTable

from eo.core.tables import CAMPAIGN_MINUTE_METRICS
from eo.runtime.config import REPO_ROOT
from infra import process
from infra.airflow import USER, AirflowService
from tests.conftest import settings_env
from tests.e2e.airflow_ui import (
    CHROMIUM,
    CHROMIUM_ARGS,
    dag_ids_listed,
    hover_description,
    login,
    run_ids_listed,
    trigger_backfill,
    trigger_with_params,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PORT = int(os.environ.get("EO_TEST_AIRFLOW_PORT", "18080"))  # one walk at a time on a port
UTC = dt.UTC
D5 = dt.datetime(2026, 11, 5)  # the lake holds events of 11-05 and 11-06
SHOTS = REPO_ROOT / "reports" / "e2e"
DONE = {"success", "failed"}


@pytest.fixture(scope="module")
def walk_lake(two_day_lake, kafka, tmp_path_factory):
    """A private copy of the two days and their checkpoints, with no rebuild yet: earlier tests
    rebuilt days in the shared lake (and left rebuilds pending verification), this walk tampers
    with gold, and its supervisor starts a stream on it. Its topic is on the worker's broker: the
    supervisor reads the stream's lag there."""
    from eo.runtime.kafka_admin import ensure_topic

    root = tmp_path_factory.mktemp("e2e-lake")
    shutil.copytree(two_day_lake.lake_root, root / "lake")
    shutil.copytree(two_day_lake.checkpoint_root, root / "checkpoints")
    shutil.rmtree(root / "lake" / "_rebuild", ignore_errors=True)
    settings = two_day_lake.with_overrides(
        lake_root=str(root / "lake"),
        checkpoint_root=str(root / "checkpoints"),
        reports_root=str(root / "reports"),
        kafka_bootstrap=kafka.bootstrap,
    )
    ensure_topic(settings)
    return settings


@pytest.fixture(scope="module")
def airflow(walk_lake, postgres, tmp_path_factory):
    """Airflow with its metadata in PostgreSQL: on SQLite, the scheduler and the API server
    raced for the one writer (a backfill answered 503, the scheduler died of StaleDataError)."""
    import psycopg

    server = postgres.dsn().rsplit("/", 1)[0]
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS airflow_e2e WITH (FORCE)")
        conn.execute("CREATE DATABASE airflow_e2e")
    with pytest.MonkeyPatch.context() as env:
        for key, value in settings_env(walk_lake).items():
            env.setenv(key, value)
        env.setenv("EO_AIRFLOW_DB_URL", server.replace("postgresql://", "postgresql+psycopg://", 1) + "/airflow_e2e")
        service = AirflowService(tmp_path_factory.mktemp("airflow-home"), PORT)
        try:
            service.start()
            yield service
        finally:
            service.stop()
    assert not any(service.running().values()), "an Airflow component outlived the test"
    assert not service.leftovers(), "a process of this Airflow (a worker, a log server) outlived it"


class Api:
    """The REST API, to wait for runs: what the test asserts is read from the UI. `idle` runs
    before each wait: the walk blanks its page there (an open Airflow page polls the API server and
    renders again every few seconds: docs/testing.md); every step opens a page after the wait."""

    def __init__(self, service: AirflowService, idle: Callable[[], None] = lambda: None) -> None:
        self.url, self.idle = service.url, idle
        body = json.dumps({"username": USER, "password": service.password()}).encode()
        request = urllib.request.Request(
            f"{self.url}/auth/token", data=body, headers={"Content-Type": "application/json"}, method="POST"
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            self.token = json.load(response)["access_token"]

    def now(self) -> str:
        """The API's idea of now, in the format of its dates."""
        return dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")

    def get(self, path: str, attempts: int = 4) -> dict:
        """GET one API path as JSON. An answer slower than 30 s is asked again (the API server
        shares two cores with the Spark tests of the other worker): a slow answer is not what
        this test checks; an error status, or a last attempt timing out, raises."""
        request = urllib.request.Request(f"{self.url}{path}", headers={"Authorization": f"Bearer {self.token}"})
        for _ in range(attempts - 1):
            try:
                return self._read(request)
            except urllib.error.HTTPError:
                raise
            except (TimeoutError, urllib.error.URLError) as e:
                if not isinstance(e, TimeoutError) and not isinstance(e.reason, TimeoutError):
                    raise
        return self._read(request)

    @staticmethod
    def _read(request: urllib.request.Request) -> dict:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)

    def send(self, method: str, path: str, body: dict) -> dict:
        """A POST or PATCH: what a step sets up beside the UI (a run with a conf, a DAG unpaused)."""
        request = urllib.request.Request(
            f"{self.url}{path}",
            data=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
            method=method,
        )
        return self._read(request)

    def task(self, dag_id: str, run_id: str, task_id: str) -> dict:
        return self.get(f"/api/v2/dags/{dag_id}/dagRuns/{urllib.parse.quote(run_id, safe='')}/taskInstances/{task_id}")

    def log(self, dag_id: str, run_id: str, task_id: str, try_number: int) -> str:
        run = urllib.parse.quote(run_id, safe="")
        path = f"/api/v2/dags/{dag_id}/dagRuns/{run}/taskInstances/{task_id}/logs/{try_number}?full_content=true"
        found = self.get(path)
        return json.dumps(found["content"])

    def runs(self, dag_id: str) -> list[dict]:
        return self.get(f"/api/v2/dags/{dag_id}/dagRuns?limit=100&order_by=run_after")["dag_runs"]

    def task_states(self, dag_id: str, run_id: str) -> dict[str, str]:
        tasks = self.get(f"/api/v2/dags/{dag_id}/dagRuns/{urllib.parse.quote(run_id, safe='')}/taskInstances")
        return {t["task_id"]: t["state"] for t in tasks["task_instances"]}

    def wait(self, dag_id: str, until, run_type: str | None = None, timeout: float = 600) -> list[dict]:
        """The DAG's runs (of `run_type`), once `until(them)` holds and every run is done."""
        self.idle()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            runs = self.runs(dag_id)
            chosen = [r for r in runs if run_type in (None, r["run_type"])]
            if until(chosen) and all(r["state"] in DONE for r in runs):
                return chosen
            time.sleep(3)
        raise AssertionError(f"{dag_id}: not done after {timeout} s: {self.runs(dag_id)}")


def after(runs: list[dict], moment: str) -> list[dict]:
    """The runs (re)started after `moment`, an ISO time from the API server's clock."""
    return [r for r in runs if (r["start_date"] or "") > moment]


def at_least(count: int):
    return lambda runs: len(runs) >= count


def noted(*texts: str):
    """Until the runs' notes, together, mention each text."""
    return lambda runs: all(any(t in (r["note"] or "") for r in runs) for t in texts)


def shoot(page, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


def note_shown(page, url: str, dag_id: str, run: dict, text: str) -> None:
    page.goto(f"{url}/dags/{dag_id}/runs/{urllib.parse.quote(run['dag_run_id'], safe='')}")
    page.get_by_text(text, exact=True).first.wait_for(timeout=30_000)


def tamper_one_row(spark, settings, day: dt.datetime) -> str:
    """One cent more on one purchase row of `day` in the live gold table; returns its campaign."""
    gold = DeltaTable.forPath(spark, settings.table_path(CAMPAIGN_MINUTE_METRICS.name))
    victim = gold.toDF().where(f"event_type = 'purchase' AND to_date(window_start) = '{day:%Y-%m-%d}'").first()
    gold.update(
        f"campaign_id = '{victim.campaign_id}' AND event_type = 'purchase' AND window_start = '{victim.window_start}'",
        {"revenue": "revenue + 0.01"},
    )
    return victim.campaign_id


@dataclass
class Walk:
    """One browser, logged in, shared by the walk's steps (one test each, in the file's order), and
    what a step found that a later one builds on. A step whose premise an earlier step did not
    record is skipped naming that step: the earlier step's failure is the one to read."""

    page: Any
    api: Api
    url: str
    shots: list[Path] = field(default_factory=list)
    found: dict[str, Any] = field(default_factory=dict)

    def shoot(self, name: str) -> None:
        self.shots.append(shoot(self.page, name))

    def need(self, key: str, step: str) -> Any:
        if key not in self.found:
            pytest.skip(f"needs {key}, which {step} records: read that test's failure first")
        return self.found[key]


@pytest.fixture(scope="module")
def walk(airflow):
    from playwright.sync_api import sync_playwright

    started = time.monotonic()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            login(page, airflow.url, USER, airflow.password())
            walk = Walk(page, Api(airflow, idle=lambda: page.goto("about:blank")), airflow.url)
            yield walk
        finally:
            browser.close()
    print(f"the day of a new user: {time.monotonic() - started:.0f} s; screenshots {[str(s) for s in walk.shots]}")


def days() -> tuple[str, str]:
    """Yesterday and the day before (UTC): unpausing rebuild_derived starts its scheduled run for
    yesterday; the backfill adds the day before."""
    yesterday = dt.datetime.combine(dt.datetime.now(UTC).date(), dt.time()) - dt.timedelta(days=1)
    return f"{yesterday:%Y-%m-%d}", f"{yesterday - dt.timedelta(days=1):%Y-%m-%d}"


def test_0_the_dag_list_shows_the_platform_and_verify_agreements_triggers(walk):
    listed = dag_ids_listed(walk.page, walk.url)
    assert {"rebuild_derived", "verify_agreement", "stream_supervisor", "lake_maintenance"} <= set(listed)
    # At a glance: verify_agreement's description names both of its triggers.
    hover_description(walk.page, "verify_agreement", "After each rebuild, and daily at 06:00 UTC")
    walk.shoot("0-dag-list")


def test_1_a_rebuild_is_named_by_its_logical_date(walk):
    """Its logical date (any time of the day) names the day, and so does the run id, in the runs list."""
    page, api, url = walk.page, walk.api, walk.url
    y, _ = days()
    now = dt.datetime.now(UTC)
    trigger_with_params(page, url, "rebuild_derived", {}, logical_date=D5.replace(hour=now.hour, minute=now.minute))
    (manual,) = api.wait("rebuild_derived", at_least(1), "manual")
    assert manual["state"] == "success", manual
    assert manual["dag_run_id"].startswith("manual__2026-11-05_"), manual
    assert manual["logical_date"][:10] == "2026-11-05" and manual["data_interval_start"][:10] == "2026-11-05"
    walk.found["the rebuild of 2026-11-05"] = manual
    note_shown(page, url, "rebuild_derived", manual, "rebuilds 2026-11-05 into rebuild")
    walk.shoot("1-named-day-run")
    run_ids_listed(page, url, "rebuild_derived", ["manual__2026-11-05_", f"scheduled__{y}T00:00:00"])
    walk.shoot("1b-rebuild-runs-named-by-day")


def test_2_verification_of_non_adjacent_rebuilt_days_passes(walk):
    """Verification of what was rebuilt, 11-05 and yesterday, passes: never the span between them,
    where 11-06 has events that were not rebuilt. Each rebuild starts the verification of its day,
    named after the day and the rebuild."""
    manual = walk.need("the rebuild of 2026-11-05", "test_1")
    api, y = walk.api, days()[0]
    verified = api.wait("verify_agreement", noted("2026-11-05", y))
    assert all(r["state"] == "success" for r in verified), verified
    assert not any("2026-11-06" in (r["note"] or "") for r in verified), verified
    ids = {r["dag_run_id"] for r in verified}
    assert f"rebuilt__2026-11-05_by_{manual['dag_run_id']}" in ids, ids
    assert f"rebuilt__{y}_by_scheduled__{y}T00:00:00+00:00" in ids, ids
    note_shown(walk.page, walk.url, "verify_agreement", verified[-1], verified[-1]["note"])
    walk.shoot("2-verify-non-adjacent-days-passed")


def test_3_two_backfills_at_once_name_their_days(walk):
    """Two backfills at once (Airflow allows one per DAG): rebuild the day before yesterday and
    yesterday with "All Runs" (yesterday had a run), and, while that runs, maintain the lake for
    the Sunday two weeks back. lake_maintenance is paused: the form's "Unpause on trigger", ticked
    by default, unpauses it (a paused DAG's backfill stays queued), and the catch-up run that
    unpausing creates is skipped by check_window."""
    page, api, url = walk.page, walk.api, walk.url
    y, b = days()
    yesterday = dt.datetime.strptime(y, "%Y-%m-%d")
    asked = api.now()
    trigger_backfill(page, url, "rebuild_derived", yesterday - dt.timedelta(days=1), yesterday, reprocess="All Runs")
    sunday = yesterday - dt.timedelta(days=(yesterday.weekday() + 1) % 7 + 7)
    trigger_backfill(page, url, "lake_maintenance", sunday, sunday + dt.timedelta(hours=23))
    rebuilt = api.wait("rebuild_derived", lambda runs: noted(b, y)(after(runs, asked)))
    maintained = api.wait("lake_maintenance", lambda runs: any(r["run_type"] == "backfill" for r in runs))
    (backfilled,) = [r for r in maintained if r["run_type"] == "backfill"]
    assert backfilled["state"] == "success" and backfilled["logical_date"][:10] == f"{sunday:%Y-%m-%d}", maintained
    states = api.task_states("lake_maintenance", backfilled["dag_run_id"])
    assert set(states.values()) == {"success"}, states  # OPTIMIZE and VACUUM ran: a backfill is asked for
    assert all(r["state"] == "success" for r in maintained), maintained
    # The runs of the days asked for: a scheduled run of the new day, when the walk passes
    # midnight UTC, is not the backfill's (a fresh-clone run at 4768818 saw one at 00:00).
    again = [r for r in after(rebuilt, asked) if r["logical_date"][:10] in (b, y)]
    assert sorted(r["note"] for r in again) == [f"rebuilds {b} into rebuild", f"rebuilds {y} into rebuild"], again
    assert all(r["state"] == "success" for r in again), again
    # Run id, logical date and note name the day each run rebuilt: the new run for the day before
    # is the backfill's, yesterday's is its scheduled run, reprocessed ("All Runs").
    assert sorted((r["dag_run_id"], r["logical_date"][:10], r["note"]) for r in again) == [
        (f"backfill__{b}T00:00:00+00:00", b, f"rebuilds {b} into rebuild"),
        (f"scheduled__{y}T00:00:00+00:00", y, f"rebuilds {y} into rebuild"),
    ], again
    run_ids_listed(page, url, "rebuild_derived", [f"backfill__{b}T00:00:00", f"scheduled__{y}T00:00:00"])
    page.get_by_text("Backfill").first.wait_for()
    walk.shoot("3-backfill-runs")
    page.goto(f"{url}/dags/lake_maintenance/runs")
    page.get_by_text("Backfill").first.wait_for()
    walk.shoot("3b-maintenance-backfill-beside-it")
    verified = api.wait("verify_agreement", lambda runs: noted(b)(after(runs, asked)))
    assert all(r["state"] == "success" for r in verified), verified
    assert f"rebuilt__{b}_by_backfill__{b}T00:00:00+00:00" in {r["dag_run_id"] for r in verified}, verified
    # The verification runs list: the days they verify, first in each id.
    run_ids_listed(page, url, "verify_agreement", [f"rebuilt__{d}_by_" for d in ("2026-11-05", b, y)])
    walk.shoot("3c-verify-runs-named-by-day")


def test_4_a_tampered_gold_row_fails_verification_and_the_data_docs_name_it(spark, walk, walk_lake):
    """One cent on one live gold row of 11-05: verification of 11-05 fails, and the Data Docs name
    the table and the differing key. A red run stays red in the runs list: its note says so, and
    where to read why."""
    walk.need("the rebuild of 2026-11-05", "test_1")
    page, api, url = walk.page, walk.api, walk.url
    campaign = tamper_one_row(spark, walk_lake, D5)
    asked = api.now()
    trigger_with_params(page, url, "verify_agreement", {"interval": "2026-11-05T00:00:00Z/2026-11-06T00:00:00Z"})
    (failed,) = after(api.wait("verify_agreement", lambda runs: after(runs, asked), "manual"), asked)
    failed_note = "verifies 2026-11-05 · FAILED in publish_data_docs: see its last log line"
    assert failed["state"] == "failed" and failed["note"] == failed_note, failed
    page.goto(f"{url}/data-docs/index.html")
    page.locator("td", has_text="campaign_minute_metrics: stream vs batch rebuild, 2026-11-05").first.wait_for()
    walk.shoot("4-data-docs-index")
    (validation,) = (Path(walk_lake.reports_root) / "data-docs" / "validations").glob(
        f"agreement_campaign_minute_metrics/{failed['dag_run_id']}_2026-11-05/*/*.html"
    )
    relative = validation.relative_to(Path(walk_lake.reports_root) / "data-docs").as_posix()
    page.goto(f"{url}/data-docs/{urllib.parse.quote(relative)}")
    page.get_by_text("Failed Only").click()
    page.get_by_text(campaign).first.wait_for()
    assert page.get_by_text("stream_revenue").count() > 0
    walk.shoot("5-data-docs-differing-key")
    last_line = api.task_states("verify_agreement", failed["dag_run_id"])
    assert last_line["publish_data_docs"] == "failed" and last_line["verify"] == "success", last_line


def test_6_a_day_nobody_rebuilt_is_skipped_not_failed(walk):
    """11-06, typed as a plain day: "not rebuilt", a skip, never a FAILED "extra". pick_interval
    answers it from the Delta logs: verify starts no Spark driver."""
    page, api, url = walk.page, walk.api, walk.url
    asked = api.now()
    trigger_with_params(page, url, "verify_agreement", {"interval": "2026-11-06"})
    (skipped,) = after(api.wait("verify_agreement", lambda runs: after(runs, asked), "manual"), asked)
    assert skipped["state"] == "success" and skipped["note"] == "verifies 2026-11-06", skipped
    states = api.task_states("verify_agreement", skipped["dag_run_id"])
    assert states == {"pick_interval": "success", "verify": "skipped", "publish_data_docs": "skipped"}, states
    note_shown(page, url, "verify_agreement", skipped, "verifies 2026-11-06")
    walk.shoot("6-never-rebuilt-day-skipped")


def test_7_a_day_in_the_future_is_refused_in_the_form(walk):
    """Refused when triggered (Airflow would hold a run dated in the future until then, the DAG's
    one active run taken); no run is made."""
    page, api, url = walk.page, walk.api, walk.url
    ahead = dt.datetime.now(UTC).replace(second=0, microsecond=0, tzinfo=None) + dt.timedelta(days=3)
    runs_before = len(api.runs("rebuild_derived"))
    refused = f"{ahead:%Y-%m-%d} is in the future"
    trigger_with_params(page, url, "rebuild_derived", {}, logical_date=ahead, refused=refused)
    walk.shoot("7-future-day-refused")
    assert len(api.runs("rebuild_derived")) == runs_before


def test_7b_a_rebuild_into_main_while_the_stream_runs_fails_at_once_saying_why(walk, walk_lake):
    """The stream's normal state is running: a rebuild into the live tables is refused at its
    first try, not retried, and the task's error is the one line, naming the stream and the
    command (make stream-stop), not spark-submit's command."""
    from eo.runtime.environment import environment
    from eo.runtime.fencing import Fence
    from eo.runtime.live_tables import QUERY, holder

    page, api, url = walk.page, walk.api, walk.url
    lease = environment(walk_lake).lease()
    # As a running stream holds it, renewed: held for the step's length, the run may queue behind others.
    stream = Fence.start(lease, QUERY, holder(), 1800.0)
    try:
        asked = api.now()
        api.send("PATCH", "/api/v2/dags/rebuild_derived", {"is_paused": False})  # as test_1's trigger left it
        api.send("POST", "/api/v2/dags/rebuild_derived/dagRuns", {
            "logical_date": "2026-11-05T03:00:00Z", "conf": {"target": "main"},
        })  # fmt: skip
        (refused,) = after(api.wait("rebuild_derived", lambda runs: after(runs, asked), "manual"), asked)
        # `make stream-status`, text and JSON, names the stream holding the lake: its pid and epoch.
        shown = stream_status(walk_lake)
        assert f"pid {os.getpid()} on " in shown["text"] and f", epoch {stream.epoch}" in shown["text"], shown
        assert (shown["json"]["instance"]["pid"], shown["json"]["instance"]["epoch"]) == (os.getpid(), stream.epoch)
    finally:
        lease.release(QUERY, stream.epoch)
    assert refused["state"] == "failed", refused
    task = api.task("rebuild_derived", refused["dag_run_id"], "rebuild_interval")
    assert task["state"] == "failed" and task["try_number"] == 1, task  # not retried
    log = api.log("rebuild_derived", refused["dag_run_id"], "rebuild_interval", 1)
    assert "holds the stream's live tables: stop it (make stream-stop) before rebuilding --target main" in log
    assert "not retried: trying again will not change it" in log
    failed_note = "rebuilds 2026-11-05 into main · FAILED in rebuild_interval: see its last log line"
    assert refused["note"] == failed_note, refused
    note_shown(page, url, "rebuild_derived", refused, failed_note)
    walk.shoot("7b-rebuild-into-main-refused-at-once")


def stream_status(settings) -> dict:
    """What `make stream-status` prints, as text and as --json, for the walk's lake."""
    import subprocess
    import sys

    env = {**os.environ, **settings_env(settings)}
    command = [sys.executable, "-m", "infra.streaming", "status"]
    text = subprocess.run(command, env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    as_json = subprocess.run([*command, "--json"], env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    return {"text": text.stdout + text.stderr, "json": json.loads(as_json.stdout)}


def test_7c_the_supervisors_restart_is_noted_on_its_run_and_its_row_is_green(walk, walk_lake):
    """A run of stream_supervisor that started the dead stream again says so at a glance: its
    stream_restarted task is green (skipped in a run that restarted nothing) and its note names
    the restart, shown on the run's page."""
    from infra import streaming

    page, api, url = walk.page, walk.api, walk.url
    assert not streaming.running(walk_lake)
    asked = api.now()
    try:
        api.send("PATCH", "/api/v2/dags/stream_supervisor", {"is_paused": False})
        # Unpaused, it runs for its latest 5 minutes (no catch-up); paused again after, so that
        # no second run starts while this step reads the first.
        run = after(api.wait("stream_supervisor", lambda runs: after(runs, asked)), asked)[0]
        api.send("PATCH", "/api/v2/dags/stream_supervisor", {"is_paused": True})
    finally:
        streaming.stop(walk_lake)  # whatever became of the stream it started
    states = api.task_states("stream_supervisor", run["dag_run_id"])
    assert run["state"] == "success" and states["stream_restarted"] == "success", (run, states)
    note = run["note"] or ""
    assert note.startswith("restarted the stream: restarted as pid "), run
    assert note.endswith("(the stream was not running); it resumes from the checkpoint"), run
    note_shown(page, url, "stream_supervisor", run, note)
    walk.shoot("7c-supervisor-restart-noted")


def test_8_a_killed_scheduler_is_started_again_and_listed(airflow, walk):
    """The watchdog starts it again within seconds, and "Component restarts" says so. Last of the
    walk: it kills a component the steps before it use."""
    page, url = walk.page, walk.url
    killed = process.kill(airflow.pid_file("scheduler"))
    process.wait_for(lambda: process.read_pid(airflow.pid_file("scheduler")) != killed, 60, "scheduler back")
    assert airflow.running()["scheduler"]
    assert process.group(killed) == []  # its executor's workers and log server went too
    assert [r["component"] for r in airflow.restarts()] == ["scheduler"]
    page.goto(f"{url}/platform/restarts")  # "Component restarts" in the navigation
    page.get_by_text("1 restart(s)").wait_for()
    assert page.get_by_role("cell", name="scheduler").count() == 1
    walk.shoot("8-scheduler-restarted")


def test_the_docs_airflow_commands_run_as_written(airflow):
    """Every `make airflow-cli ARGS="..."` the docs give runs, as written, on this Airflow (a
    backfill as its dry run: the walk's Airflow starts no Spark job for it); and a bare `airflow`
    with only AIRFLOW_HOME set finds the same PostgreSQL database, not an empty SQLite one."""
    import os
    import subprocess
    import sys

    from infra.airflow import outside_airflow
    from tests.documented import airflow_commands, documented_files

    commands = [c for path in documented_files() for c in airflow_commands(path.read_text())]
    assert commands, "the docs give no make airflow-cli command"
    for args in commands:
        dry = ["--dry-run"] if args[:2] == ["backfill", "create"] and "--dry-run" not in args else []
        cli = [sys.executable, "-m", "infra.airflow", "cli", "--port", str(airflow.port), "--home", str(airflow.home)]
        done = subprocess.run([*cli, "--", *args, *dry], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"make airflow-cli ARGS={' '.join(args)!r}: {done.stderr[-2000:]}"
        assert "metadata in PostgreSQL at" in done.stderr, done.stderr
    bare = {**outside_airflow(dict(os.environ)), "AIRFLOW_HOME": str(airflow.home)}
    binary = str(Path(sys.executable).parent / "airflow")
    conn = subprocess.run(
        [binary, "config", "get-value", "database", "sql_alchemy_conn"], env=bare, capture_output=True, text=True
    )
    assert conn.stdout.strip() == os.environ["EO_AIRFLOW_DB_URL"], conn.stderr[-2000:]
    runs = subprocess.run(
        [binary, "dags", "list-runs", "rebuild_derived", "-o", "json"], env=bare, capture_output=True, text=True
    )
    # Airflow logs to stdout too: the JSON is the last line. The walk's runs, not an empty database's none.
    assert runs.returncode == 0 and json.loads(runs.stdout.strip().splitlines()[-1]), runs.stderr[-2000:]
