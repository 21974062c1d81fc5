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
    verify = dagbag.dags["verify_agreement"]
    assert downstream(verify, "pick_interval") == {"verify"}
    assert downstream(verify, "verify") == {"publish_data_docs"}
    assert verify.get_task("publish_data_docs").trigger_rule == "all_done"
    supervisor = dagbag.dags["stream_supervisor"]
    assert downstream(supervisor, "inspect") == {"restart_if_needed", "check_lag"}
    assert downstream(supervisor, "restart_if_needed") == {"check_lag"}
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
    verify = dagbag.dags["verify_agreement"]
    assert "gold_rebuilt" in str(verify.timetable.asset_condition)
    assert verify.timetable.timetable.expression == "0 6 * * *"
    assert dagbag.dags["rebuild_derived"].get_task("announce_rebuilt").outlets[0].name == "gold_rebuilt"


def test_verify_is_live_from_the_start_and_takes_an_interval(dagbag):
    """Paused, Airflow would fold the rebuilds of that time into one late run."""
    verify = dagbag.dags["verify_agreement"]
    assert verify.is_paused_upon_creation is False
    assert verify.start_date is None  # so the first 06:00 run is the next one, not one for a day not rebuilt
    assert "interval" in verify.params and verify.params["interval"] is None
    assert "day" in dagbag.dags["rebuild_derived"].params


def test_every_task_log_starts_with_the_event_time_its_run_covers(dagbag):
    for dag in dagbag.dags.values():
        for t in dag.tasks:
            callbacks = t.on_execute_callback if isinstance(t.on_execute_callback, list) else [t.on_execute_callback]
            assert any(getattr(c, "__name__", "") == "announce_scope" for c in callbacks), f"{dag.dag_id}.{t.task_id}"
