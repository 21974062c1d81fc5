"""
### rebuild_derived

Rebuilds the gold tables (`campaign_minute_metrics`, `user_sessions`) for one event-time day
from the bronze log, with the same transformations the stream uses.

- **Schedule**: daily; each run covers its data interval `[start, end)` in UTC.
- **Idempotent**: the interval is overwritten with Delta `replaceWhere`, so re-running a day or
  backfilling it twice leaves identical tables.
- **Params**: `full_rebuild` rebuilds everything instead of the interval; `target` writes the
  comparison namespace (`rebuild`, default, which `verify_agreement` then checks) or replaces the
  live gold tables (`main`).
- **Backfill** from the UI (Trigger → Backfill) or `airflow backfill create --dag-id rebuild_derived
  --from-date 2026-11-20 --to-date 2026-11-21`.
"""

from __future__ import annotations

from airflow.sdk import CronDataIntervalTimetable, Param, dag, task
from airflow.sdk.exceptions import AirflowSkipException
from eo_common.platform import DEFAULT_ARGS, GOLD_REBUILT, START_DATE, TAGS, PlatformSparkSubmitOperator

INTERVAL = (
    "{{ 'all' if params.full_rebuild else data_interval_start.isoformat() ~ '/' ~ data_interval_end.isoformat() }}"
)


@dag(
    dag_id="rebuild_derived",
    schedule=CronDataIntervalTimetable("0 0 * * *", timezone="UTC"),
    start_date=START_DATE,
    catchup=False,
    max_active_runs=1,  # replaceWhere runs on one table do not overlap
    default_args=DEFAULT_ARGS,
    tags=[*TAGS, "batch", "rebuild"],
    doc_md=__doc__,
    params={
        "full_rebuild": Param(False, type="boolean", description="rebuild the whole log, not the interval"),
        "target": Param("rebuild", enum=["rebuild", "main"], description="comparison namespace or live gold"),
    },
)
def rebuild_derived():
    rebuild = PlatformSparkSubmitOperator(
        task_id="rebuild_interval",
        script="batch/rebuild.py",
        application_args=[f"--interval={INTERVAL}", "--target={{ params.target }}"],
    )

    @task(outlets=[GOLD_REBUILT])
    def announce_rebuilt(params=None, outlet_events=None, data_interval_start=None, data_interval_end=None):
        """Tell verify_agreement which interval is ready to compare."""
        if params["target"] != "rebuild":
            raise AirflowSkipException("live gold was replaced; nothing to compare against")
        interval = (
            "all" if params["full_rebuild"] else f"{data_interval_start.isoformat()}/{data_interval_end.isoformat()}"
        )
        outlet_events[GOLD_REBUILT].extra = {"interval": interval}
        return interval

    rebuild >> announce_rebuilt()


rebuild_derived()
