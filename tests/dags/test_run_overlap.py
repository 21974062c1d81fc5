"""Runs that must not overlap do not, whatever their kind: Airflow counts a backfill's runs apart
from the others (a manual run beside a backfill shows "Active Runs 2 of 1"), so max_active_runs
alone lets a manual rebuild and a backfilled one write at once. The scheduler's own choice of what
to queue, on a manual run and a backfill run of the same DAG, must hold back the second writer."""

import datetime as dt

import pytest
from sqlalchemy import select

pytestmark = pytest.mark.integration

UTC = dt.UTC
# Each DAG and the task whose runs may not overlap: the one that writes.
WRITERS = {"rebuild_derived": "rebuild_interval", "verify_agreement": "verify", "lake_maintenance": "optimize"}
# A backfill's range holding a slot of each DAG: daily 00:00 and 06:00, and Sundays 03:00 (2026-11-08).
BACKFILLED = {
    "rebuild_derived": (dt.datetime(2026, 11, 2, tzinfo=UTC), dt.datetime(2026, 11, 2, 12, tzinfo=UTC)),
    "verify_agreement": (dt.datetime(2026, 11, 2, tzinfo=UTC), dt.datetime(2026, 11, 2, 12, tzinfo=UTC)),
    "lake_maintenance": (dt.datetime(2026, 11, 8, tzinfo=UTC), dt.datetime(2026, 11, 8, 12, tzinfo=UTC)),
}


@pytest.fixture(scope="module")
def synced(airflow_db):
    """The project's DAGs in the metadata database, as the DAG processor leaves them, unpaused."""
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import BundleDagBag, sync_bag_to_db
    from airflow.models.dag import DagModel
    from airflow.utils.session import create_session

    manager = DagBundlesManager()
    manager.sync_bundles_to_db()
    for bundle in manager.get_all_dag_bundles():
        if not bundle.is_initialized:
            bundle.initialize()
        bag = BundleDagBag(dag_folder=bundle.path, bundle_path=bundle.path, bundle_name=bundle.name)
        sync_bag_to_db(bag, bundle.name, bundle.version)
    with create_session() as session:
        for model in session.scalars(select(DagModel).where(DagModel.dag_id.in_(WRITERS))):
            model.is_paused = False
    return airflow_db


def manual_and_backfill_runs(dag_id: str, session):
    """A manual run and a backfill run of `dag_id`, both running (the backfill's made by Airflow's own
    backfill code, as `airflow backfill create` and the UI make them)."""
    from airflow.api.common.trigger_dag import trigger_dag
    from airflow.models.backfill import ReprocessBehavior, _create_backfill
    from airflow.models.dagrun import DagRun
    from airflow.utils.state import DagRunState
    from airflow.utils.types import DagRunTriggeredByType, DagRunType

    backfill = _create_backfill(
        dag_id=dag_id,
        from_date=BACKFILLED[dag_id][0],
        to_date=BACKFILLED[dag_id][1],
        max_active_runs=1,
        reverse=False,
        dag_run_conf=None,
        triggering_user_name="test",
        reprocess_behavior=ReprocessBehavior.COMPLETED,
    )
    manual = trigger_dag(
        dag_id,
        triggered_by=DagRunTriggeredByType.TEST,
        run_id=f"manual__overlap_{backfill.id}",
        logical_date=dt.datetime(2026, 11, 3, 12, tzinfo=UTC),
        session=session,
    )
    backfilled = session.scalar(
        select(DagRun).where(DagRun.backfill_id == backfill.id, DagRun.run_type == DagRunType.BACKFILL_JOB)
    )
    for run in (manual, backfilled):
        run.state = DagRunState.RUNNING
    session.flush()
    return session.merge(manual), backfilled


@pytest.mark.parametrize("dag_id", sorted(WRITERS))
def test_a_backfill_run_waits_while_a_manual_run_writes(synced, dag_id):
    from airflow.jobs.job import Job
    from airflow.jobs.scheduler_job_runner import SchedulerJobRunner
    from airflow.utils.session import create_session
    from airflow.utils.state import TaskInstanceState

    writer = WRITERS[dag_id]
    with create_session() as session:
        manual, backfilled = manual_and_backfill_runs(dag_id, session)
        try:
            manual.get_task_instance(writer, session=session).state = TaskInstanceState.RUNNING  # at work
            backfilled.get_task_instance(writer, session=session).state = TaskInstanceState.SCHEDULED  # ready
            other = next(ti for ti in backfilled.get_task_instances(session=session) if ti.task_id != writer)
            other.state = TaskInstanceState.SCHEDULED  # a task that writes nothing: free to run beside it
            session.flush()
            runner = SchedulerJobRunner(job=Job())
            queued = runner._executable_task_instances_to_queued(max_tis=32, session=session)
            picked = {(ti.run_id, ti.task_id) for ti in queued}
            expected_free, held = (backfilled.run_id, other.task_id), (backfilled.run_id, writer)
        finally:
            session.rollback()  # the manual run and every state set here
            forget_backfill(backfilled.backfill_id, session)
    assert expected_free in picked  # the scheduler does queue the backfill's other tasks
    assert held not in picked, f"{dag_id}: the backfill's {writer} would run beside the manual run's"


def forget_backfill(backfill_id: int, session) -> None:
    """Take the backfill (committed by Airflow's own code) out again: the other tests' runs are alone."""
    from airflow.models.backfill import Backfill, BackfillDagRun
    from airflow.models.dagrun import DagRun
    from sqlalchemy import delete

    session.execute(delete(BackfillDagRun).where(BackfillDagRun.backfill_id == backfill_id))
    for run in session.scalars(select(DagRun).where(DagRun.backfill_id == backfill_id)):
        session.delete(run)
    session.flush()
    session.execute(delete(Backfill).where(Backfill.id == backfill_id))
