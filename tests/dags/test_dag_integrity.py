"""The DAG files: they import, carry tags, retries and docs, and wire tasks in order (what they
import at parse time: test_dag_parse.py)."""

import sys

import pytest

from eo.runtime.config import REPO_ROOT

pytestmark = pytest.mark.unit

DAGS = REPO_ROOT / "dags"
EXPECTED = {"rebuild_derived", "verify_agreement", "stream_supervisor", "lake_maintenance"}


@pytest.fixture(scope="module")
def dagbag():
    sys.path.insert(0, str(DAGS))  # as the DAG processor does, for eo_common
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(DAGS))


def test_every_dag_imports_without_errors(dagbag):
    assert dagbag.import_errors == {}
    assert set(dagbag.dag_ids) == EXPECTED


def test_shared_code_is_not_parsed_as_dags():
    assert "eo_common/" in (DAGS / ".airflowignore").read_text()


def test_tags_retries_and_docs_everywhere(dagbag):
    for dag in dagbag.dags.values():
        assert "effectively-once" in dag.tags and len(dag.tags) >= 2, dag.dag_id
        assert dag.doc_md and dag.dag_id in dag.doc_md, dag.dag_id
        assert dag.description and ("UTC" in dag.description or "minutes" in dag.description), dag.dag_id
        for t in dag.tasks:
            assert t.retries >= 1, f"{dag.dag_id}.{t.task_id} has no retries"


def downstream(dag, task_id):
    return {t.task_id for t in dag.get_task(task_id).downstream_list}


def test_task_order(dagbag):
    rebuild = dagbag.dags["rebuild_derived"]
    assert downstream(rebuild, "plan_interval") == {"rebuild_interval", "announce_rebuilt"}
    assert downstream(rebuild, "rebuild_interval") == {"announce_rebuilt"}
    assert downstream(rebuild, "announce_rebuilt") == {"verify_rebuilt"}
    verify = dagbag.dags["verify_agreement"]
    assert downstream(verify, "pick_interval") == {"verify"}
    assert downstream(verify, "verify") == {"publish_data_docs"}
    assert verify.get_task("publish_data_docs").trigger_rule == "all_done"
    supervisor = dagbag.dags["stream_supervisor"]
    assert downstream(supervisor, "inspect") == {"restart_if_needed", "check_lag"}
    assert downstream(supervisor, "restart_if_needed") == {"stream_restarted", "check_lag"}
    maintenance = dagbag.dags["lake_maintenance"]
    assert downstream(maintenance, "check_window") == {"check_retention", "cleanup_reports"}
    assert downstream(maintenance, "check_retention") == {"optimize"}
    assert downstream(maintenance, "optimize") == {"vacuum"}


def test_spark_work_goes_through_the_platforms_operator(dagbag):
    from eo_common.platform import PlatformSparkSubmitOperator

    spark_tasks = {
        (dag.dag_id, t.task_id)
        for dag in dagbag.dags.values()
        for t in dag.tasks
        if isinstance(t, PlatformSparkSubmitOperator)
    }
    assert spark_tasks == {
        ("rebuild_derived", "rebuild_interval"),
        ("verify_agreement", "verify"),
        ("lake_maintenance", "optimize"),
        ("lake_maintenance", "vacuum"),
    }
    assert all(dagbag.dags[d].get_task(t).conn_id == "spark_default" for d, t in spark_tasks)


def test_verify_runs_after_each_rebuild_and_on_its_own_schedule(dagbag):
    """Each rebuild starts a verification of its own interval, named after it (an asset-triggered
    run's id would name only when it was created); the daily run checks what is still pending."""
    verify = dagbag.dags["verify_agreement"]
    assert verify.timetable.expression == "0 6 * * *"
    rebuild = dagbag.dags["rebuild_derived"]
    assert rebuild.get_task("announce_rebuilt").outlets[0].name == "gold_rebuilt"  # lineage
    trigger = rebuild.get_task("verify_rebuilt")
    assert trigger.trigger_dag_id == "verify_agreement" and trigger.reset_dag_run
    assert "key='verification'" in trigger.trigger_run_id and trigger.logical_date is None
    assert set(trigger.conf) == {"interval", "rebuild_run"} <= set(verify.params)


def test_runs_are_named_by_the_day_they_cover(dagbag):
    """rebuild_derived's timetable (plugins/eo_timetables.py): the logical date is the covered day
    for manual runs too, and the run ids name it; a backfill's run_after is its day's start."""
    import datetime as dt

    from airflow.timetables.base import DataInterval, TimeRestriction
    from airflow.utils.types import DagRunType

    timetable = dagbag.dags["rebuild_derived"].timetable
    assert type(timetable).__module__ == "eo_timetables"  # the name the plugin registers
    day = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)
    next_day = day + dt.timedelta(days=1)
    interval = timetable.infer_manual_data_interval(run_after=day + dt.timedelta(hours=15, minutes=7))
    assert (interval.start, interval.end) == (day, next_day)  # the day of the logical date, not the one before
    now = dt.datetime.now(dt.UTC)
    with pytest.raises(ValueError, match="is in the future"):  # Airflow would hold such a run until then
        timetable.infer_manual_data_interval(run_after=now + dt.timedelta(days=3))
    at = dt.datetime(2026, 12, 2, 22, 41, 7, tzinfo=dt.UTC)
    manual = timetable.generate_run_id(run_type=DagRunType.MANUAL, run_after=at, data_interval=interval)
    assert manual == "manual__2026-11-20_2026-12-02T22:41:07+00:00"
    unnamed = timetable.generate_run_id(run_type=DagRunType.MANUAL, run_after=at, data_interval=None)
    assert unnamed == "manual__2026-12-01_2026-12-02T22:41:07+00:00"  # no logical date: the day before
    scheduled = timetable.generate_run_id(
        run_type=DagRunType.SCHEDULED, run_after=next_day, data_interval=DataInterval(day, next_day)
    )
    assert scheduled == "scheduled__2026-11-20T00:00:00+00:00"
    # A backfill's runs (Airflow names them backfill__<run_after>): a day over runs after its start.
    first = timetable.next_dagrun_info(
        last_automated_data_interval=None, restriction=TimeRestriction(day, next_day, catchup=True)
    )
    second = timetable.next_dagrun_info(
        last_automated_data_interval=first.data_interval, restriction=TimeRestriction(day, next_day, catchup=True)
    )
    assert [(i.run_after, i.data_interval.start) for i in (first, second)] == [(day, day), (next_day, next_day)]
    # The day under way waits for its end, as every scheduled run did.
    now = dt.datetime.now(dt.UTC)
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    running = timetable.next_dagrun_info(
        last_automated_data_interval=DataInterval(today - dt.timedelta(days=1), today),
        restriction=TimeRestriction(None, None, catchup=True),
    )
    assert (running.data_interval.start, running.run_after) == (today, today + dt.timedelta(days=1))


def test_verify_is_live_from_the_start_and_takes_an_interval(dagbag):
    """Paused, Airflow would fold the rebuilds of that time into one late run."""
    verify = dagbag.dags["verify_agreement"]
    assert verify.is_paused_upon_creation is False
    assert verify.start_date is None  # so the first 06:00 run is the next one, not one for a day not rebuilt
    assert "interval" in verify.params and verify.params["interval"] is None
    assert "day" not in dagbag.dags["rebuild_derived"].params  # the logical date names the day


def test_every_task_log_starts_with_the_event_time_its_run_covers(dagbag):
    for dag in dagbag.dags.values():
        for t in dag.tasks:
            callbacks = t.on_execute_callback if isinstance(t.on_execute_callback, list) else [t.on_execute_callback]
            assert any(getattr(c, "__name__", "") == "announce_scope" for c in callbacks), f"{dag.dag_id}.{t.task_id}"


def test_the_timetable_is_stored_and_read_back_through_its_plugin(dagbag):
    """Airflow stores a custom timetable by its import path and reads it back only from a
    plugin that registers it (plugins/eo_timetables.py): the scheduler must find the same class."""
    from airflow.serialization.decoders import decode_timetable
    from airflow.serialization.encoders import encode_timetable

    stored = encode_timetable(dagbag.dags["rebuild_derived"].timetable)
    assert stored["__type"] == "eo_timetables.CoveredDayTimetable", stored
    again = decode_timetable(stored)
    assert type(again).__qualname__ == "CoveredDayTimetable" and again.summary == "0 0 * * *"
