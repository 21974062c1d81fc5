"""
### rebuild_derived

Rebuilds every declared gold table (eo/core/gold/) for one event-time day
from the bronze log, with the same transformations the stream uses.

- **Which day**: the UTC day of the run's logical date, whatever the kind of run, and its run id
  names it. Trigger → Logical Date = 2026-11-20 (any time of that day) rebuilds
  [2026-11-20, 2026-11-21) as `manual__2026-11-20_<when triggered>`; trigger the same day again
  with another time of it (Airflow allows one run per logical date). The scheduled run just
  after midnight rebuilds the day that ended (`scheduled__2026-11-20T00:00:00+00:00`), a backfill
  from 2026-11-20 to 2026-11-21 those two days (`backfill__2026-11-20T00:00:00+00:00`, ...).
  A run without a logical date rebuilds the day before it was triggered. A logical date in the
  future is refused when triggered (the form says why; no run is made), and a `day` in the run's
  conf that names another day fails `plan_interval` (the param is gone: the logical date says it).
  The run's note ("rebuilds 2026-11-20 into rebuild"), the first line of every task log and
  `plan_interval`'s return value say the same (plugins/eo_timetables.py).
- **Schedule**: daily, just after midnight UTC, for the day that ended.
- **Verified**: each rebuild into the comparison namespace starts a `verify_agreement` run of
  the days it rebuilt, named after them (`rebuilt__2026-11-20_by_<this run's id>`).
- **Idempotent**: the interval is overwritten with Delta `replaceWhere`, so re-running a day or
  backfilling it twice leaves identical tables.
- **One rebuild at a time**: manual, scheduled and backfill runs queue for `rebuild_interval`
  (`max_active_tis_per_dag=1`, applied by the scheduler across all runs, backfills included;
  `max_active_runs` counts a backfill's runs apart).
- **Params**: `full_rebuild` rebuilds everything instead of the interval; `target` writes the
  comparison namespace (`rebuild`, default, which `verify_agreement` then checks) or replaces the
  live gold tables (`main`).
- **`target` = `main` while the stream runs** is refused at once, not retried, the task's error
  the one line: "the stream on <host> (pid N) holds the stream's live tables: stop it (make
  stream-stop) before rebuilding --target main, or wait for it to end". Stop the stream, trigger
  again, then `make stream-start`.
- **Backfill** from the UI (Trigger → Backfill; choose *All Runs* to rebuild days that already
  have a run too) or `make airflow-cli ARGS="backfill create --dag-id rebuild_derived --from-date
  2026-11-20 --to-date 2026-11-21"`.
"""

from __future__ import annotations

from airflow.sdk import Param, dag, task
from eo_common.airflow_api import AirflowSkipException, CoveredDayTimetable, TriggerDagRunOperator
from eo_common.platform import DEFAULT_ARGS, GOLD_REBUILT, START_DATE, TAGS, PlatformSparkSubmitOperator

INTERVAL = "{{ ti.xcom_pull(task_ids='plan_interval') }}"


@dag(
    dag_id="rebuild_derived",
    description="Daily (00:00 UTC) or for a named day: rebuild gold from bronze for one UTC day",
    # Logical date and run id name the day a run covers, manual runs and backfills too.
    schedule=CoveredDayTimetable("0 0 * * *", timezone="UTC"),
    start_date=START_DATE,
    catchup=False,
    # Airflow counts backfill runs apart from the others (a manual run and a backfill are "2 of 1"):
    # rebuild_interval's own limit, which the scheduler applies across every run, keeps the
    # replaceWhere writes of a manual run, a scheduled one and a backfill from overlapping.
    max_active_runs=1,
    default_args=DEFAULT_ARGS,
    tags=[*TAGS, "batch", "rebuild"],
    doc_md=__doc__,
    params={
        "full_rebuild": Param(False, type="boolean", description="rebuild the whole log, not the interval"),
        "target": Param(
            "rebuild",
            enum=["rebuild", "main"],
            description=(
                "rebuild: the comparison namespace, which verify_agreement checks. main: replaces the live"
                " gold tables, and is refused at once while the stream runs (its normal state): stop it"
                " first (make stream-stop), then start it again after the run"
            ),
        ),
    },
)
def rebuild_derived():
    @task
    def plan_interval(params=None, data_interval_start=None, data_interval_end=None, dag_run=None) -> str:
        """The event-time interval this run rebuilds: its data interval, the day of its logical date."""
        import datetime as dt

        from eo_common.airflow_api import AirflowFailException

        from eo.core.intervals import in_the_future, parse_many, plan_refusal, run_interval

        interval = run_interval(params, data_interval_start, data_interval_end, dag_run.run_after)
        if refusal := plan_refusal(params, interval, dag_run.logical_date):
            raise AirflowFailException(refusal)
        if refusal := in_the_future(parse_many(interval), dt.datetime.now(dt.UTC)):
            raise AirflowFailException(refusal)
        print(f"this run rebuilds {interval} into {params['target']!r}")
        return interval

    rebuild = PlatformSparkSubmitOperator(
        task_id="rebuild_interval",
        script="jobs/rebuild.py",
        application_args=[f"--interval={INTERVAL}", "--target={{ params.target }}"],
        max_active_tis_per_dag=1,  # one rebuild at a time, whatever kind of run (above)
    )

    @task(outlets=[GOLD_REBUILT])
    def announce_rebuilt(interval: str, params=None, outlet_events=None, run_id=None, ti=None):
        """Record the interval as rebuilt and not yet verified (verify_agreement's ledger), name
        the verification run that checks it, and say it on the asset event (lineage)."""
        from eo.core.intervals import verification_run_id
        from eo.runtime.config import load_settings
        from eo.runtime.quality.ledger import record_rebuilt

        if params["target"] != "rebuild":
            raise AirflowSkipException("live gold was replaced; nothing to compare against")
        print(f"pending verification: {record_rebuilt(load_settings(), interval, run_id)}")
        outlet_events[GOLD_REBUILT].extra = {"interval": interval}
        ti.xcom_push(key="verification", value=verification_run_id(interval, run_id))
        return interval

    # A verify_agreement run of exactly what this run rebuilt, its id naming the days (an
    # asset-triggered run's would name the moment it was created). No logical date: the same
    # day may be rebuilt by several runs. The same run rebuilt again (a backfill's "All Runs", a
    # clear) starts its verification again.
    verify = TriggerDagRunOperator(
        task_id="verify_rebuilt",
        trigger_dag_id="verify_agreement",
        trigger_run_id="{{ ti.xcom_pull(task_ids='announce_rebuilt', key='verification') }}",
        conf={"interval": "{{ ti.xcom_pull(task_ids='announce_rebuilt') }}", "rebuild_run": "{{ run_id }}"},
        logical_date=None,
        reset_dag_run=True,
    )

    interval = plan_interval()
    interval >> rebuild >> announce_rebuilt(interval) >> verify


rebuild_derived()
