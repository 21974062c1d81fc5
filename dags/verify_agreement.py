"""
### verify_agreement

Great Expectations agreement check: the streamed gold tables must equal their batch
recomputation row by row, exactly; silver keys unique; every acknowledged record accounted for.

- **When**: after every `rebuild_derived` run (it emits the `gold_rebuilt` asset with the
  interval it rebuilt), and on its own daily schedule for the previous day.
- **What it compares**: the `interval` param when you give one (Trigger → `interval` =
  `2026-11-20T00:00:00Z/2026-11-21T00:00:00Z`, several separated by commas, or `all`); else
  exactly the intervals rebuilt and not yet verified (11-19, 11-20 and 11-22 stay apart: 11-21,
  which nobody rebuilt, is not compared), or the previous day on its 06:00 timetable. Each
  rebuild leaves a file in `reports/verify/rebuilt/` that a passing check removes: Airflow folds
  or drops asset events that arrive while a run is busy, the files are never lost. The run's
  note, the first line of each task log and `pick_interval` say which.
- **Unpaused from the start**: a paused DAG folds the asset events of the rebuilds made
  meanwhile into one later run; running from the start, each rebuild is verified as it lands.
- **Fails** the run on any disagreement, in `publish_data_docs` (not retried: the same data
  would disagree again); `verify` itself is retried only when it could not check (a crash).
  The verdict (`reports/verify/latest.json`) and a link to the Data Docs (served by Airflow at
  `/data-docs/`, also under "Data Docs" in the navigation) are in that task's log, with each
  differing key's explanation (`python -m batch.explain`): both sides' events and what tells them apart.
"""

from __future__ import annotations

from airflow.sdk import AssetOrTimeSchedule, CronTriggerTimetable, Param, dag, task
from eo_common.platform import DEFAULT_ARGS, GOLD_REBUILT, TAGS, PlatformSparkSubmitOperator


@dag(
    dag_id="verify_agreement",
    description="After each rebuild, and daily at 06:00 UTC: stream gold == batch gold, per interval",
    schedule=AssetOrTimeSchedule(timetable=CronTriggerTimetable("0 6 * * *", timezone="UTC"), assets=GOLD_REBUILT),
    # No start_date: its timetable then waits for the next 06:00 instead of checking, on the day it
    # is deployed, a previous day nobody rebuilt yet.
    catchup=False,
    max_active_runs=1,
    default_args={**DEFAULT_ARGS, "retries": 1},
    tags=[*TAGS, "quality", "great-expectations"],
    doc_md=__doc__,
    is_paused_upon_creation=False,  # see "Unpaused from the start" above
    params={
        "interval": Param(
            None,
            type=["null", "string"],
            description="START/END[,START/END...] (ISO 8601, UTC) or all; empty: what was rebuilt",
        ),
    },
)
def verify_agreement():
    @task
    def pick_interval(triggering_asset_events=None, logical_date=None, dag_run=None, params=None, ti=None) -> str:
        """The `interval` param, else every interval rebuilt and not yet verified (never the span
        between them), or the previous UTC day on the timetable."""
        from eo.core.intervals import as_text, parse_many, verification_scope
        from eo.runtime.config import load_settings
        from eo.runtime.quality.ledger import to_verify

        if params.get("interval"):
            scope = as_text(parse_many(params["interval"]))  # a malformed param fails here, not in Spark
            print(f"verifying the interval asked for: {scope}")
            return scope
        events = [e for batch in (triggering_asset_events or {}).values() for e in batch]
        waiting, rebuilt = to_verify(load_settings(), events)
        scope = verification_scope(rebuilt, logical_date or dag_run.run_after)
        print(f"rebuilt and not yet verified: {rebuilt or 'nothing'}; verifying {scope}")
        ti.xcom_push(key="settles", value=waiting)
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
    def publish_data_docs(run_id=None, ti=None) -> dict:
        """Point at this run's verdict and the Data Docs; fail the run when the check failed,
        else mark the rebuilds it verified as no longer pending."""
        from airflow.sdk.exceptions import AirflowFailException

        from eo.runtime.config import load_settings
        from eo.runtime.quality.ledger import settle
        from eo.runtime.quality.verdicts import docs_link, read_verdict, run_verdict_path

        settings = load_settings()
        path = run_verdict_path(settings, run_id)
        verdict = read_verdict(settings, path)
        if verdict is None:
            raise AirflowFailException(f"verify wrote no verdict ({path}); see the verify task's log")
        print(f"verdict: {'PASSED' if verdict['passed'] else 'FAILED'} - {path}")
        print(f"Data Docs: {docs_link(verdict)}")
        for table, found in verdict["tables"].items():  # each differing key, explained on both sides
            for key in found.get("explained", []):
                print(f"{table} {key['status']} {key['key']}: {key.get('diagnosis') or key.get('error')}")
                if key.get("file"):
                    print(f"  explanation: {key['file']}  (again: {key['command']})")
        if not verdict["passed"]:
            failed = [t for t, v in verdict["tables"].items() if not v["passed"]]
            raise AirflowFailException(f"stream and batch disagree on {failed or 'reconciliation'}; see {path}")
        settle(settings, ti.xcom_pull(task_ids="pick_interval", key="settles") or [])
        return {"passed": True, "verdict": str(path), "data_docs": docs_link(verdict)}

    pick_interval() >> verify >> publish_data_docs()


verify_agreement()
