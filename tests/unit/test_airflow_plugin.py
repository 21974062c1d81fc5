"""The platform's Airflow plugin: run notes from the scheduler's listener, Data Docs served."""

from __future__ import annotations

import datetime as dt
import importlib.util
import sys
from types import SimpleNamespace

import pytest

from eo.runtime.config import REPO_ROOT

pytestmark = pytest.mark.unit

UTC = dt.UTC


@pytest.fixture(scope="module")
def plugin():
    spec = importlib.util.spec_from_file_location("eo_platform", REPO_ROOT / "plugins" / "eo_platform.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["eo_platform"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("eo_platform", None)


def a_run(dag_id, conf=None, note=None, events=(), interval=(None, None)):
    return SimpleNamespace(
        dag_id=dag_id,
        run_id="manual__x",
        conf=conf or {},
        note=note,
        data_interval_start=interval[0],
        data_interval_end=interval[1],
        consumed_asset_events=[SimpleNamespace(extra={"interval": e}) for e in events],
        logical_date=None,
        run_after=dt.datetime(2026, 11, 23, 9, tzinfo=UTC),
    )


def test_a_run_gets_a_note_with_the_days_it_covers(plugin, tmp_path, monkeypatch):
    monkeypatch.setenv("EO_REPORTS_ROOT", str(tmp_path))  # an empty ledger of pending rebuilds
    notes = plugin.RunNotes()
    day = dt.datetime(2026, 11, 20, tzinfo=UTC)
    run = a_run("rebuild_derived", interval=(day, day + dt.timedelta(days=1)))  # logical date 2026-11-20
    notes.on_dag_run_running(run, "started")
    assert run.note == "rebuilds 2026-11-20 into rebuild"
    run = a_run(
        "verify_agreement",
        events=["2026-11-19T00:00:00+00:00/2026-11-20T00:00:00+00:00", "2026-11-22T00:00:00Z/2026-11-23T00:00:00Z"],
    )
    notes.on_dag_run_running(run, "started")
    assert run.note == "verifies 2026-11-19 and 2026-11-22"


def test_a_verify_note_counts_rebuilds_whose_asset_events_airflow_folded(plugin, tmp_path, monkeypatch):
    from eo.runtime.config import load_settings
    from eo.runtime.quality.ledger import record_rebuilt

    monkeypatch.setenv("EO_REPORTS_ROOT", str(tmp_path))
    record_rebuilt(load_settings(), "2026-11-06T00:00:00+00:00/2026-11-07T00:00:00+00:00", "manual__1")
    run = a_run("verify_agreement", events=["2026-11-04T00:00:00+00:00/2026-11-05T00:00:00+00:00"])
    plugin.RunNotes().on_dag_run_running(run, "started")
    assert run.note == "verifies 2026-11-04 and 2026-11-06"


def test_a_note_someone_wrote_is_kept_and_a_bad_conf_never_raises(plugin):
    notes = plugin.RunNotes()
    run = a_run("rebuild_derived", note="re-run after the late files")
    notes.on_dag_run_running(run, "started")
    assert run.note == "re-run after the late files"
    run = a_run("verify_agreement", {"interval": "not an interval"})
    notes.on_dag_run_running(run, "started")  # logged, not raised into the scheduler
    assert run.note is None


def test_the_data_docs_are_served_and_linked(plugin, tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    (tmp_path / "data-docs").mkdir()
    (tmp_path / "data-docs" / "index.html").write_text("<h1>docs</h1>")
    monkeypatch.setenv("EO_REPORTS_ROOT", str(tmp_path))
    response = TestClient(plugin.data_docs_app()).get("/index.html")
    assert response.status_code == 200 and "docs" in response.text
    assert "/data-docs" in {app["url_prefix"] for app in plugin.EffectivelyOncePlugin.fastapi_apps}
    assert plugin.EffectivelyOncePlugin.external_views[0]["href"] == "/data-docs/index.html"


def test_a_failed_run_says_so_in_its_note_once_with_the_failed_tasks(plugin):
    """A later green run of another day must not hide a red one: its note keeps the failure."""
    run = a_run("verify_agreement", note="verifies 2026-11-05")
    run.task_instances = [
        SimpleNamespace(task_id="pick_interval", state="success"),
        SimpleNamespace(task_id="verify", state="success"),
        SimpleNamespace(task_id="publish_data_docs", state="failed"),
    ]
    notes = plugin.RunNotes()
    notes.on_dag_run_failed(run, "task_failure")
    assert run.note == "verifies 2026-11-05 · FAILED in publish_data_docs: see its last log line"
    notes.on_dag_run_failed(run, "task_failure")  # a second report does not stack
    assert run.note.count("FAILED") == 1
    bare = a_run("lake_maintenance")
    bare.task_instances = [
        SimpleNamespace(task_id="vacuum", state="failed"),
        SimpleNamespace(task_id="a", state="failed"),
    ]
    notes.on_dag_run_failed(bare, "task_failure")
    assert bare.note == "FAILED in a, vacuum: see its last log line"
    broken = a_run("rebuild_derived")  # no task instances to read: logged, never raised
    notes.on_dag_run_failed(broken, "task_failure")
    assert broken.note is None


def test_the_watchdogs_restarts_are_listed_in_the_ui(plugin, tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path))
    client = TestClient(plugin.platform_app())
    assert "No component has died" in client.get("/restarts").text
    (tmp_path / "restarts.jsonl").write_text(
        '{"component": "scheduler", "at": "2026-11-26T03:00:00Z", "pid": 41, "tasks": [{"id": "0199a0b2-7c1e", '
        '"dag_id": "rebuild_derived", "run_id": "backfill__2026-11-21T00:00:00+00:00", "task_id": "rebuild", '
        '"try_number": 1, "ran_seconds": 1500.0}]}\n'
        '{"component": "triggerer", "at": "2026-11-26T03:05:00Z", "pid": 42}\n'
    )
    page = client.get("/restarts").text
    assert "2 restart(s), 1 running task(s) lost with them" in page
    assert page.index("triggerer") < page.index("scheduler")  # newest first
    # The scheduler's row names the task it took with it, run again from the start.
    assert "1 lost, run again from the start:" in page
    assert "rebuild_derived.rebuild (run backfill__2026-11-21T00:00:00+00:00, try 1, ran 25 min 0 s)" in page
    assert any(v["href"] == "/platform/restarts" for v in plugin.EffectivelyOncePlugin.external_views)


SCHEDULERS_SESSION = object()  # the session the scheduler's run is bound to


@pytest.fixture(autouse=True)
def _bound_to_the_schedulers_session(plugin, monkeypatch):
    monkeypatch.setattr(plugin, "_run_session", lambda run: SCHEDULERS_SESSION, raising=False)


def in_the_schedulers_session(read):
    """A read of the run's that must be made in the scheduler's session: a session of Airflow's
    making (provide_session's default) is, in the scheduler, that session, closed after."""

    def checked(*args, session=None, **kwargs):
        assert session is SCHEDULERS_SESSION, "read outside the scheduler's session"
        return read(*args, **kwargs)

    return checked


def a_supervisor_run(outcome, note=None):
    pull = in_the_schedulers_session(lambda task_ids: outcome if task_ids == "restart_if_needed" else None)
    ti = SimpleNamespace(xcom_pull=pull)
    run = a_run("stream_supervisor", note=note)
    run.get_task_instance = in_the_schedulers_session(lambda task_id: ti if task_id == "restart_if_needed" else None)
    run.task_instances = [SimpleNamespace(task_id="check_lag", state="failed")]
    return run


def test_a_supervisor_run_that_restarted_the_stream_says_so_and_a_healthy_one_does_not(plugin):
    notes = plugin.RunNotes()
    restart = a_supervisor_run("restarted as pid 4242 (the stream was not running); it resumes from the checkpoint")
    notes.on_dag_run_success(restart, "success")
    assert restart.note == (
        "restarted the stream: restarted as pid 4242 (the stream was not running); it resumes from the checkpoint"
    )
    standby = a_supervisor_run("a standby took over (the stream was not running); it resumes from the checkpoint")
    notes.on_dag_run_success(standby, "success")
    assert standby.note.startswith("restarted the stream: a standby took over")
    waited = a_supervisor_run("waiting: a reset on h pid 7, epoch 9, renewed until 10:00:00 UTC holds the lease")
    notes.on_dag_run_success(waited, "success")
    assert waited.note.startswith("did not restart the stream, waiting: a reset on h")
    for outcome in ("healthy", "left stopped: stopped by hand; make stream-start resumes it", None):
        quiet = a_supervisor_run(outcome)
        notes.on_dag_run_success(quiet, "success")
        assert quiet.note is None, outcome
    kept = a_supervisor_run("restarted as pid 1 (x)", note="looked at it: fine")
    notes.on_dag_run_success(kept, "success")
    assert kept.note == "looked at it: fine"  # a note someone wrote is kept


def test_a_supervisor_run_that_restarted_then_failed_on_lag_says_both(plugin):
    run = a_supervisor_run("restarted as pid 4242 (stalled: events 20 min); it resumes from the checkpoint")
    plugin.RunNotes().on_dag_run_failed(run, "task_failure")
    assert run.note == (
        "restarted the stream: restarted as pid 4242 (stalled: events 20 min); it resumes from the checkpoint"
        " · FAILED in check_lag: see its last log line"
    )


def test_a_broken_xcom_read_never_raises_into_the_scheduler(plugin):
    run = a_run("stream_supervisor")
    run.get_task_instance = lambda task_id, session=None: (_ for _ in ()).throw(RuntimeError("no session"))
    plugin.RunNotes().on_dag_run_success(run, "success")
    assert run.note is None
