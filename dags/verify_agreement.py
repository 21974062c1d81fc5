"""
### verify_agreement

Great Expectations agreement check: the streamed gold tables must equal their batch
recomputation row by row, exactly; silver keys unique; every acknowledged record accounted for.

- **When**: after every `rebuild_derived` run (it emits the `gold_rebuilt` asset with the
  interval it rebuilt), and on its own daily schedule for the previous day.
- **What it compares**: exactly the intervals rebuilt since its last run (11-19, 11-20 and 11-22
  stay three intervals: 11-21, which nobody rebuilt, is not compared), or the previous day on its
  06:00 timetable. `pick_interval`'s log says which.
- **Fails** the run on any disagreement, in `publish_data_docs` (not retried: the same data
  would disagree again); `verify` itself is retried only when it could not check (a crash).
  The verdict (`reports/verify/latest.json`) and the Data Docs paths are in that task's log.
"""

from __future__ import annotations

from airflow.sdk import AssetOrTimeSchedule, CronTriggerTimetable, dag, task
from eo_common.platform import DEFAULT_ARGS, GOLD_REBUILT, START_DATE, TAGS, PlatformSparkSubmitOperator


@dag(
    dag_id="verify_agreement",
    description="After each rebuild, and daily at 06:00 UTC: stream gold == batch gold, per interval",
    schedule=AssetOrTimeSchedule(timetable=CronTriggerTimetable("0 6 * * *", timezone="UTC"), assets=GOLD_REBUILT),
    start_date=START_DATE,
    catchup=False,
    max_active_runs=1,
    default_args={**DEFAULT_ARGS, "retries": 1},
    tags=[*TAGS, "quality", "great-expectations"],
    doc_md=__doc__,
)
def verify_agreement():
    @task
    def pick_interval(triggering_asset_events=None, logical_date=None) -> str:
        """Every interval rebuilt since the last check (never the span between them), or the
        previous UTC day on the timetable."""
        from batch.intervals import verification_scope

        rebuilt = [
            event.extra["interval"]
            for events in (triggering_asset_events or {}).values()
            for event in events
            if event.extra.get("interval")
        ]
        scope = verification_scope(rebuilt, logical_date)
        print(f"rebuilt since the last check: {rebuilt or 'nothing'}; verifying {scope}")
        return scope

    verify = PlatformSparkSubmitOperator(
        task_id="verify",
        script="batch/verify.py",
        application_args=[
            "--interval={{ ti.xcom_pull(task_ids='pick_interval') }}",
            "--run-name={{ run_id }}",
            "--verdict-only",  # a disagreement fails publish_data_docs, which is not retried
        ],
    )

    @task(trigger_rule="all_done")
    def publish_data_docs(run_id=None) -> dict:
        """Point at this run's verdict and the Data Docs; fail the run when the check failed."""
        from airflow.sdk.exceptions import AirflowFailException

        from jobs.config import load_settings
        from jobs.quality.verdicts import read_verdict, run_verdict_path

        settings = load_settings()
        path = run_verdict_path(settings, run_id)
        verdict = read_verdict(settings, path)
        if verdict is None:
            raise AirflowFailException(f"verify wrote no verdict ({path}); see the verify task's log")
        print(f"verdict: {'PASSED' if verdict['passed'] else 'FAILED'} - {path}")
        print(f"Data Docs: {verdict['data_docs']}")
        if not verdict["passed"]:
            failed = [t for t, v in verdict["tables"].items() if not v["passed"]]
            raise AirflowFailException(f"stream and batch disagree on {failed or 'reconciliation'}; see {path}")
        return {"passed": True, "verdict": str(path), "data_docs": verdict["data_docs"]}

    pick_interval() >> verify >> publish_data_docs()


verify_agreement()
