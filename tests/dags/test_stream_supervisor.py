"""stream_supervisor against a real broker: a dead streaming job is restarted from its
checkpoints and goes on committing; a healthy one is left alone."""

import time
from pathlib import Path

import pytest
from airflow.sdk import DagRunState

from infra import streaming
from tests.conftest import settings_env
from tests.integration.producing import produce

pytestmark = pytest.mark.integration


def commits(settings, query: str) -> int:
    folder = Path(settings.checkpoint_path(query)) / "commits"
    return len(list(folder.glob("[0-9]*"))) if folder.is_dir() else 0


def supervise(dag) -> dict:
    result = dag.test()
    assert result.state == DagRunState.SUCCESS
    seen = {t: result.get_task_instance(t).xcom_pull(task_ids=t) for t in ("inspect", "restart_if_needed", "check_lag")}
    seen["stream_restarted"] = result.get_task_instance("stream_restarted").state  # the grid's row
    seen["note"] = run_note(result)
    return seen


def run_note(result) -> str | None:
    """The note the platform's listener gives the run, read from the run as the scheduler has it."""
    import importlib.util

    from eo.runtime.config import REPO_ROOT

    spec = importlib.util.spec_from_file_location("eo_platform_notes", REPO_ROOT / "plugins" / "eo_platform.py")
    plugin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plugin)
    from airflow.models import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import select
    from sqlalchemy.orm import object_session

    with create_session() as session:  # bound to a session, as in the scheduler
        run = session.scalars(select(DagRun).where(DagRun.run_id == result.run_id)).one()
        run.note = None
        plugin.RunNotes().on_dag_run_success(run, "success")
        # The scheduler's session is left open: a listener that closes it (a provide_session call
        # without it) detaches the scheduler's objects, and the scheduler dies at its next step.
        assert object_session(run) is session, "the listener closed the scheduler's session"
        note = run.note
        session.rollback()
    return note


def test_a_dead_streaming_job_is_restarted_and_catches_up(airflow_db, pipeline, monkeypatch):
    for key, value in settings_env(pipeline).items():
        monkeypatch.setenv(key, value)
    produce(pipeline, 3000)
    dag = airflow_db.dags["stream_supervisor"]
    assert not streaming.running(pipeline)
    try:
        first = supervise(dag)
        assert first["inspect"]["running"] is False
        assert first["restart_if_needed"].startswith("restarted as pid ")
        assert first["restart_if_needed"].endswith("(the stream was not running); it resumes from the checkpoint")
        assert first["check_lag"] == 3000  # nothing streamed yet: the whole topic is lag
        assert first["stream_restarted"] == "success"
        assert first["note"] == f"restarted the stream: {first['restart_if_needed']}"
        deadline = time.monotonic() + 240
        while commits(pipeline, "events") == 0:
            assert streaming.running(pipeline), (streaming.home(pipeline) / "streaming.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the restarted job never committed"
            time.sleep(1)
        second = supervise(dag)
        assert second["restart_if_needed"] == "healthy"
        assert second["stream_restarted"] == "skipped" and second["note"] is None
        assert second["inspect"]["queries"]["events"]["last_batch"] is not None
        assert second["check_lag"] < 3000
    finally:
        streaming.stop(pipeline)
    assert not streaming.running(pipeline)


def test_the_supervisor_waits_beside_a_reset_and_says_so_in_its_task_log(airflow_db, pipeline, monkeypatch):
    """A reset holds the stream's lease (as ops.reset takes it): the DAG's restart_if_needed starts
    nothing and its line names the reset; the stream is not running afterwards."""
    from eo.runtime.live_tables import holding_live_tables

    for key, value in settings_env(pipeline).items():
        monkeypatch.setenv(key, value)
    produce(pipeline, 100)
    dag = airflow_db.dags["stream_supervisor"]
    with holding_live_tables(pipeline, "a reset") as fence:
        seen = supervise(dag)
    assert seen["inspect"]["lease"]["kind"] == "reset"
    outcome = seen["restart_if_needed"]
    assert outcome.startswith("waiting: a reset on ") and f"epoch {fence.epoch}" in outcome, outcome
    assert seen["stream_restarted"] == "skipped" and seen["note"] == f"did not restart the stream, {outcome}"
    assert not streaming.running(pipeline)
