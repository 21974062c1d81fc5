"""Real DAG runs (dag.test) against a small log: rebuild_derived then verify_agreement, and a
backfill of two days rebuilt again, which must leave identical tables."""

import datetime as dt

import pytest
from airflow.sdk import DagRunState

from eo.core.tables import CAMPAIGN_MINUTE_METRICS, USER_SESSIONS
from tests.conftest import settings_env
from tests.helpers import sorted_rows

pytestmark = pytest.mark.integration

UTC = dt.UTC
DAY1, DAY2 = dt.datetime(2026, 11, 5, tzinfo=UTC), dt.datetime(2026, 11, 6, tzinfo=UTC)
GOLD_TABLES = (CAMPAIGN_MINUTE_METRICS, USER_SESSIONS)


@pytest.fixture
def lake_env(two_day_lake, monkeypatch):
    for key, value in settings_env(two_day_lake).items():
        monkeypatch.setenv(key, value)
    return two_day_lake


def day_rows(spark, settings, table, column, day, namespace):
    rows = sorted_rows(spark, settings, table, namespace)
    return [r for r in rows if day <= r[column].replace(tzinfo=UTC) < day + dt.timedelta(days=1)]


def run(dag, at: dt.datetime):
    """A manual run of rebuild_derived at `at` covers the day of its logical date, whatever its
    time (plugins/eo_timetables.py): [day, day + 1 day) is planned and rebuilt, not the day before,
    and the verification it starts is named after that day and this run."""
    day = at.replace(hour=0, minute=0)
    result = dag.test(logical_date=at)
    assert result.data_interval_start == day, result.data_interval_start
    assert result.state == DagRunState.SUCCESS, f"{dag.dag_id} for {day:%Y-%m-%d}: {result.state}"
    planned = result.get_task_instance("plan_interval").xcom_pull(task_ids="plan_interval")
    assert planned == f"{day.isoformat()}/{(day + dt.timedelta(days=1)).isoformat()}"
    verification = result.get_task_instance("announce_rebuilt").xcom_pull(
        task_ids="announce_rebuilt", key="verification"
    )
    assert verification == f"rebuilt__{day:%Y-%m-%d}_by_{result.run_id}"
    assert result.get_task_instance("verify_rebuilt").state == "success"  # the verify run was created
    return result


@pytest.mark.slow
def test_backfilling_two_days_twice_changes_nothing_and_verifies(spark, airflow_db, lake_env):
    """Two days rebuilt, then the second rebuilt again: identical tables, exactly the stream's rows
    of those days; then verify_agreement's daily run passes them and publishes its verdict. The
    second day's first rebuild is the DAG's run at 15:07 of it (the wiring: the run rebuilds the
    day of its logical date, whatever its time, and leaves the first day, rebuilt before it); the
    other two are the job its task submits (batch.rebuild.rebuild), run in-process: the same proof
    that a day rebuilt again changes nothing, without a spark-submit JVM a run (docs/testing.md).
    The walk's backfill (tests/e2e/test_airflow_ui.py, step 3) runs the DAG at midnight."""
    from batch.rebuild import rebuild
    from eo.core.intervals import Interval

    def rebuilt() -> dict:
        return {t.name: sorted_rows(spark, lake_env, t, "rebuild") for t in GOLD_TABLES}

    rebuild(spark, lake_env, Interval(DAY1, DAY2))
    run(airflow_db.dags["rebuild_derived"], DAY2 + dt.timedelta(hours=15, minutes=7))  # late in its day
    snapshots = [rebuilt()]
    rebuild(spark, lake_env, Interval(DAY2, DAY2 + dt.timedelta(days=1)))
    snapshots.append(rebuilt())
    assert snapshots[0] == snapshots[1]
    for table, column in ((CAMPAIGN_MINUTE_METRICS, "window_start"), (USER_SESSIONS, "session_start")):
        rows = snapshots[1][table.name]
        # Both days' rows, as the stream has them: the run for DAY2 left DAY1's.
        assert {r[column].date() for r in rows} == {DAY1.date(), DAY2.date()}, table.name
        both_days = [r for day in (DAY1, DAY2) for r in day_rows(spark, lake_env, table, column, day, "main")]
        assert rows == sorted(both_days, key=lambda r: tuple(str(r[k]) for k in table.key))
        assert all(DAY1 <= r[column].replace(tzinfo=UTC) < DAY2 + dt.timedelta(days=1) for r in rows)
    result = airflow_db.dags["verify_agreement"].test(logical_date=DAY2 + dt.timedelta(hours=6))
    assert result.state == DagRunState.SUCCESS
    published = result.get_task_instance("publish_data_docs").xcom_pull(task_ids="publish_data_docs")
    assert published["passed"] is True


def test_days_in_the_future_are_refused_and_days_nobody_rebuilt_are_skipped(airflow_db, lake_env):
    """No false alarms: a future day fails planning in one line; a past day nobody rebuilt is
    "not rebuilt", said without a Spark driver (verify and publish_data_docs skipped, the run not
    failed); and with nothing rebuilt, the daily run verifies nothing (skipped), where it used to
    check the previous day."""
    from eo.runtime.quality.ledger import pending, settle

    future = (dt.datetime.now(UTC) + dt.timedelta(days=3)).date()
    at = dt.datetime.combine(future, dt.time(), tzinfo=UTC)
    # Refused when triggered (the REST API answers 400 with the line): Airflow would hold the run
    # until its logical date, the DAG's one active run taken meanwhile.
    with pytest.raises(ValueError, match=f"{future} is in the future"):
        airflow_db.dags["rebuild_derived"].test(logical_date=at)
    # A `day` in the conf (the param the logical date replaced) naming another day: refused too.
    result = airflow_db.dags["rebuild_derived"].test(logical_date=DAY1, run_conf={"day": f"{DAY2:%Y-%m-%d}"})
    assert result.state == DagRunState.FAILED and result.get_task_instance("plan_interval").state == "failed"

    verify = airflow_db.dags["verify_agreement"]
    never = dt.datetime(2026, 11, 12, tzinfo=UTC)  # the log holds 11-05 and 11-06; nobody rebuilt 11-12
    interval = f"{never.isoformat()}/{(never + dt.timedelta(days=1)).isoformat()}"
    result = verify.test(run_conf={"interval": interval})
    assert result.state == DagRunState.SUCCESS
    assert result.get_task_instance("verify").state == "skipped"  # answered by pick_interval: no Spark driver
    assert result.get_task_instance("publish_data_docs").state == "skipped"

    result = verify.test(run_conf={"interval": f"{future}T00:00:00Z/{future + dt.timedelta(days=1)}T00:00:00Z"})
    assert result.state == DagRunState.FAILED
    assert result.get_task_instance("pick_interval").state == "failed"  # it says why
    assert result.get_task_instance("publish_data_docs").state == "failed"  # and the last task repeats it

    settle(lake_env, list(pending(lake_env)))  # nothing waits for a check
    result = verify.test(logical_date=dt.datetime.now(UTC), run_conf={"interval": None})  # dag.test keeps params
    states = {ti.task_id: ti.state for ti in result.get_task_instances()}
    assert result.state == DagRunState.SUCCESS, states
    assert states == {
        "pick_interval": "skipped",
        "verify": "skipped",
        "publish_data_docs": "skipped",
    }


def test_a_rebuilt_day_without_rows_passes_without_a_spark_driver(spark, airflow_db, lake_env):
    """A rebuilt day no table holds a row of (the log has none there) is answered by pick_interval
    from the Delta logs: verify starts no Spark driver (skipped), publish_data_docs passes it."""
    from batch.rebuild import rebuild
    from eo.core.intervals import Interval

    empty = Interval(dt.datetime(2026, 11, 15, tzinfo=UTC), dt.datetime(2026, 11, 16, tzinfo=UTC))
    rebuild(spark, lake_env, empty)
    result = airflow_db.dags["verify_agreement"].test(
        run_conf={"interval": f"{empty.start.isoformat()}/{empty.end.isoformat()}"}
    )
    states = {ti.task_id: ti.state for ti in result.get_task_instances()}
    assert result.state == DagRunState.SUCCESS, states
    assert states == {"pick_interval": "success", "verify": "skipped", "publish_data_docs": "success"}
    published = result.get_task_instance("publish_data_docs").xcom_pull(task_ids="publish_data_docs")
    assert published["passed"] is True
    answered = result.get_task_instance("pick_interval").xcom_pull(task_ids="pick_interval", key="answered")
    assert answered.startswith("verification PASSED over 2026-11-15: no rows over 2026-11-15 on either side")
