"""
### rebuild_derived

Rebuilds the gold tables (`campaign_minute_metrics`, `user_sessions`) for one event-time day
from the bronze log, with the same transformations the stream uses.

- **Which day**: the `day` param when you give one (Trigger → `day` = 2026-11-20 rebuilds
  [2026-11-20, 2026-11-21) UTC; trigger the same day again as often as you like). Without it,
  the run's data interval: the scheduled run at midnight rebuilds the day that just ended, and
  a backfill from 2026-11-20 to 2026-11-21 rebuilds those two days (a run triggered without a
  logical date: the day before it was triggered). A day in the future is refused. The run's
  note ("rebuilds 2026-11-20 into rebuild"), the first line of every task log and
  `plan_interval`'s return value say which. Run ids are Airflow's: named after the moment a run
  may start, the end of its day (`backfill__2026-11-21T00:00:00+00:00` rebuilds 2026-11-20);
  read the note, or the logical date.
- **Schedule**: daily, just after midnight UTC, for the day that ended.
- **Idempotent**: the interval is overwritten with Delta `replaceWhere`, so re-running a day or
  backfilling it twice leaves identical tables.
- **One rebuild at a time**: manual, scheduled and backfill runs queue for `rebuild_interval`
  (`max_active_tis_per_dag=1`, applied by the scheduler across all runs, backfills included;
  `max_active_runs` counts a backfill's runs apart).
- **Params**: `full_rebuild` rebuilds everything instead of the interval; `target` writes the
  comparison namespace (`rebuild`, default, which `verify_agreement` then checks) or replaces the
  live gold tables (`main`).
- **Backfill** from the UI (Trigger → Backfill; leave `day` empty there, and choose *All Runs*
  to rebuild days that already have a run too) or `make airflow-cli ARGS="backfill create --dag-id
  rebuild_derived --from-date 2026-11-20 --to-date 2026-11-21"`.
"""

from __future__ import annotations

from airflow.sdk import Param, dag, task
from eo_common.airflow_api import AirflowSkipException, CronDataIntervalTimetable
from eo_common.platform import DEFAULT_ARGS, GOLD_REBUILT, START_DATE, TAGS, PlatformSparkSubmitOperator

INTERVAL = "{{ ti.xcom_pull(task_ids='plan_interval') }}"


@dag(
    dag_id="rebuild_derived",
    description="Daily (00:00 UTC) or for a named day: rebuild gold from bronze for one UTC day",
    schedule=CronDataIntervalTimetable("0 0 * * *", timezone="UTC"),
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
        "day": Param(
            None,
            type=["null", "string"],
            format="date",
            description="the UTC day to rebuild (YYYY-MM-DD); empty: the run's data interval",
        ),
        "full_rebuild": Param(False, type="boolean", description="rebuild the whole log, not the interval"),
        "target": Param("rebuild", enum=["rebuild", "main"], description="comparison namespace or live gold"),
    },
)
def rebuild_derived():
    @task
    def plan_interval(params=None, data_interval_start=None, data_interval_end=None, dag_run=None) -> str:
        """The event-time interval this run rebuilds: the `day` param, or the data interval."""
        import datetime as dt

        from eo_common.airflow_api import AirflowFailException

        from eo.core.intervals import in_the_future, parse_many, run_interval

        if params.get("day") and dag_run.run_type == "backfill":
            raise AirflowFailException("a backfill rebuilds the days of its range: leave `day` empty")
        interval = run_interval(params, data_interval_start, data_interval_end, dag_run.run_after)
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
    def announce_rebuilt(interval: str, params=None, outlet_events=None, run_id=None):
        """Tell verify_agreement which interval is ready to compare: in its ledger (which it
        always reads) and on the asset event (which starts it)."""
        from eo.runtime.config import load_settings
        from eo.runtime.quality.ledger import record_rebuilt

        if params["target"] != "rebuild":
            raise AirflowSkipException("live gold was replaced; nothing to compare against")
        print(f"pending verification: {record_rebuilt(load_settings(), interval, run_id)}")
        outlet_events[GOLD_REBUILT].extra = {"interval": interval}
        return interval

    interval = plan_interval()
    interval >> rebuild >> announce_rebuilt(interval)


rebuild_derived()
