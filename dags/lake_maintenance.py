"""
### lake_maintenance

Weekly: compact the Delta tables (OPTIMIZE, Z-ordered on the columns the jobs filter on),
VACUUM what no version needs any more, and delete old verification reports.

The VACUUM retention (`retention_hours`) is checked first: it must outlast Delta's minimum,
the longest allowed stream downtime and the stream's current lag (`conf/platform.toml`,
`[maintenance]`). An unsafe value fails `check_retention` with the reason, before anything runs.

A scheduled run that starts more than 2 hours after its slot (the run Airflow creates for the
last slot when the DAG is unpaused, by "unpause on trigger" for one) is skipped by
`check_window`: the live lake is compacted in its window, or when asked (Trigger, or `force`).
"""

from __future__ import annotations

from airflow.sdk import Param, dag, task
from eo_common.airflow_api import AirflowSkipException, CronTriggerTimetable
from eo_common.platform import DEFAULT_ARGS, START_DATE, TAGS, PlatformSparkSubmitOperator


@dag(
    dag_id="lake_maintenance",
    description="Weekly (Sunday 03:00 UTC): OPTIMIZE and VACUUM the lake, refusing an unsafe retention",
    schedule=CronTriggerTimetable("0 3 * * 0", timezone="UTC"),
    start_date=START_DATE,
    catchup=False,
    max_active_runs=1,
    default_args=DEFAULT_ARGS,
    tags=[*TAGS, "maintenance", "delta"],
    doc_md=__doc__,
    params={
        "retention_hours": Param(168, type="integer", minimum=0, description="VACUUM retention"),
        "force": Param(False, type="boolean", description="run a scheduled run even outside its window"),
        "report_keep_days": Param(
            None, type=["null", "integer"], minimum=1, description="days to keep reports; empty: conf/platform.toml's"
        ),
    },
)
def lake_maintenance():
    @task
    def check_window(dag_run=None, params=None) -> str:
        """A scheduled run long after its slot (one Airflow created when the DAG was unpaused,
        say by "unpause on trigger") is skipped: maintenance of the live lake runs in its window,
        or when someone asks for it (a manual trigger, or `force`)."""
        import datetime as dt

        from eo.runtime.maintenance import outside_window

        late = outside_window(dag_run.run_type, dag_run.run_after, dt.datetime.now(dt.UTC), params["force"])
        if late:
            raise AirflowSkipException(late)
        return "in its window" if dag_run.run_type == "scheduled" else f"asked for ({dag_run.run_type})"

    @task
    def check_retention(params=None) -> float:
        from eo_common.airflow_api import AirflowFailException

        from eo.runtime.config import load_settings
        from eo.runtime.maintenance import UnsafeRetention
        from eo.runtime.maintenance import check_retention as check

        try:
            return check(load_settings(), params["retention_hours"]).required_hours
        except UnsafeRetention as exc:
            print(exc.detail)
            raise AirflowFailException(str(exc)) from None  # one line, the last of the log

    # One OPTIMIZE and one VACUUM at a time, whatever kind of run (a backfill's runs are counted
    # apart from max_active_runs): two compactions of one table would refuse each other's commits.
    optimize = PlatformSparkSubmitOperator(
        task_id="optimize", script="jobs/maintenance.py", application_args=["--optimize"], max_active_tis_per_dag=1
    )
    vacuum = PlatformSparkSubmitOperator(
        task_id="vacuum",
        script="jobs/maintenance.py",
        application_args=["--vacuum", "--retention-hours={{ params.retention_hours }}"],
        max_active_tis_per_dag=1,
    )

    @task
    def cleanup_reports(params=None) -> int:
        from eo.runtime.config import load_settings
        from eo.runtime.maintenance import delete_old_reports

        settings = load_settings()
        days = params["report_keep_days"] or settings.maintenance["report_keep_days"]
        stale = delete_old_reports(settings, days)
        print(f"deleted {len(stale)} reports older than {days} days")
        return len(stale)

    window = check_window()
    window >> check_retention() >> optimize >> vacuum
    window >> cleanup_reports()


lake_maintenance()
