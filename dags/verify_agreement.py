"""
### verify_agreement

Great Expectations agreement check: the streamed gold tables must equal their batch
recomputation row by row, exactly; silver keys unique; every acknowledged record accounted for.

- **When**: after every `rebuild_derived` run into the comparison namespace, which starts a
  run of this DAG for exactly the interval it rebuilt, named after it
  (`rebuilt__2026-11-20_by_manual__2026-11-20_...`), and daily at 06:00 for whatever was rebuilt
  and not yet verified (nothing rebuilt: the run is skipped, never failed).
- **What it compares**: the `interval` param when you give one (Trigger → `interval` = a day,
  `2026-11-20`, or `2026-11-20T00:00:00Z/2026-11-21T00:00:00Z`, several separated by commas, or
  `all`; the run's note then names it: "verifies 2026-11-20"); a rebuild's
  run, the interval that rebuild rebuilt; else (the 06:00 run) exactly the intervals rebuilt and
  not yet verified (11-19, 11-20 and 11-22 stay apart: 11-21, which nobody rebuilt, is not
  compared). Event time nobody rebuilt is reported as "not rebuilt, nothing to compare" (a skip),
  never as extra rows; a day in the future is refused. Each rebuild leaves a file in
  `reports/verify/rebuilt/` that a passing check of it removes (the rebuild's own run, or the
  06:00 run): a rebuild whose check failed or never ran stays pending. The run's note, the first
  line of each task log and `pick_interval` say which.
- **Without Spark** when there is nothing to compare: event time nobody rebuilt, or an
  interval no table holds a row of (the Delta logs' statistics say so), is answered by
  `pick_interval`; `verify` is then skipped, starting no Spark driver.
- **Unpaused from the start**: the runs rebuilds start wait, queued, while it is paused; running
  from the start, each rebuild is verified as it lands.
- **Fails** the run on any disagreement, in `publish_data_docs` (not retried: the same data
  would disagree again), whose last log line names each failing table, its counts and its
  first differing keys with both sides' values ("events stream 2, batch 1"); each interval's
  reconciliation counts the records whose events fall in it (records of other days, or named by
  no ack log, fail nothing); `verify` itself is retried only when it could not check (a crash).
  The verdict (`reports/verify/latest.json`) and a link to the Data Docs (served by Airflow at
  `/data-docs/`, also under "Data Docs" in the navigation) are in that task's log, with each
  differing key's explanation (`python -m batch.explain`): both sides' events and what tells them apart.
"""

from __future__ import annotations

from airflow.sdk import Param, dag, task
from eo_common.airflow_api import AirflowSkipException, CronTriggerTimetable
from eo_common.platform import DEFAULT_ARGS, TAGS, PlatformSparkSubmitOperator


@dag(
    dag_id="verify_agreement",
    description="After each rebuild, and daily at 06:00 UTC: stream gold == batch gold, per interval",
    # And a run per rebuild, started by rebuild_derived's verify_rebuilt (named after its days: an
    # asset-triggered run's id would name only the moment it was created).
    schedule=CronTriggerTimetable("0 6 * * *", timezone="UTC"),
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
            description=(
                "a day (2026-11-21), START/END (ISO 8601, UTC), several of them comma-separated, or all;"
                " empty: what was rebuilt and not yet verified"
            ),
        ),
        "rebuild_run": Param(
            None,
            type=["null", "string"],
            description="set by rebuild_derived: the rebuild run whose interval this run verifies",
        ),
    },
)
def verify_agreement():
    @task
    def pick_interval(triggering_asset_events=None, dag_run=None, params=None, ti=None, run_id=None) -> str:
        """The `interval` param (a rebuild's run: the interval it rebuilt, whose ledger files a
        pass settles), else every interval rebuilt and not yet verified (never the span between
        them); nothing rebuilt: a skip, as there is nothing to compare. Event time nobody
        rebuilt, or rebuilt but holding no row on either side, is answered here from the tables'
        logs (the verdict written, XCom `answered`): `verify` then starts no Spark driver."""
        import datetime as dt

        from eo_common.airflow_api import AirflowFailException

        from eo.core.intervals import as_text, in_the_future, parse_many, verification_scope
        from eo.runtime.config import load_settings
        from eo.runtime.quality.ledger import recorded_by, to_verify
        from eo.runtime.quality.verdicts import answer_without_spark, answered_line, run_verdict_path

        def refuse(line: str):  # publish_data_docs, the run's last task, repeats it: the run is red
            ti.xcom_push(key="refused", value=line)
            raise AirflowFailException(line)

        settings = load_settings()
        if params.get("interval"):
            try:
                intervals = parse_many(params["interval"])  # a malformed param fails here, not in Spark
            except ValueError as exc:
                refuse(f"bad interval: {exc}")
            if refusal := in_the_future(intervals, dt.datetime.now(dt.UTC)):
                refuse(refusal)
            print(f"verifying the interval asked for: {as_text(intervals)}")
            scope = as_text(intervals)
            if params.get("rebuild_run"):  # started by that rebuild: a pass settles its ledger files
                ti.xcom_push(key="settles", value=recorded_by(settings, params["rebuild_run"]))
        else:
            events = [e for batch in (triggering_asset_events or {}).values() for e in batch]
            waiting, rebuilt = to_verify(settings, events)
            scope = verification_scope(rebuilt)
            if scope is None:
                raise AirflowSkipException("nothing rebuilt since the last check: nothing to verify")
            print(f"rebuilt and not yet verified: {rebuilt}; verifying {scope}")
            ti.xcom_push(key="settles", value=waiting)
        answered = answer_without_spark(settings, parse_many(scope), run_verdict_path(settings, run_id))
        if answered is not None:
            print(answered_line(answered))
            ti.xcom_push(key="answered", value=answered_line(answered))
        return scope

    verify = PlatformSparkSubmitOperator(
        task_id="verify",
        script="jobs/verify.py",
        application_args=[
            "--interval={{ ti.xcom_pull(task_ids='pick_interval') }}",
            "--run-name={{ run_id }}",
            "--verdict-only",  # a disagreement fails publish_data_docs, which is not retried
        ],
        answered_by="pick_interval",  # answered without Spark: skipped
        max_active_tis_per_dag=1,  # one check at a time (one GX project), backfill runs included
    )

    @task(trigger_rule="all_done", multiple_outputs=False)  # after a verify that failed too, to say so; one XCom
    def publish_data_docs(run_id=None, ti=None) -> dict:
        """Point at this run's verdict and the Data Docs; fail the run when the check failed, in
        one last line that says where (skip it when nothing asked for was rebuilt), else mark the
        rebuilds it verified as no longer pending."""
        from eo_common.airflow_api import AirflowFailException

        from eo.runtime.config import load_settings
        from eo.runtime.quality.ledger import settle
        from eo.runtime.quality.verdicts import (
            NOT_REBUILT,
            answered_line,
            docs_link,
            failure_line,
            headline,
            not_rebuilt_line,
            read_verdict,
            run_verdict_path,
        )

        if ti.xcom_pull(task_ids="pick_interval") is None:  # refused or skipped: nothing was checked
            if refused := ti.xcom_pull(task_ids="pick_interval", key="refused"):
                raise AirflowFailException(refused)
            raise AirflowSkipException("no interval was picked: nothing was verified")
        settings = load_settings()
        path = run_verdict_path(settings, run_id)
        verdict = read_verdict(settings, path)
        if verdict is None:
            raise AirflowFailException(f"verify wrote no verdict ({path}); see the verify task's log")
        if verdict.get("status") == NOT_REBUILT:
            raise AirflowSkipException(not_rebuilt_line(verdict))
        print(f"verdict: {'PASSED' if verdict['passed'] else 'FAILED'} - {path}")
        if verdict.get("empty"):
            print(answered_line(verdict))
        print(f"Data Docs: {docs_link(verdict)}")
        for table, found in verdict["tables"].items():  # each differing key, explained on both sides
            for key in found.get("explained", []):
                print(f"{table} {key['status']} {key['key']}: {key.get('diagnosis') or key.get('error')}")
                if key.get("file"):
                    print(f"  explanation: {key['file']}  (again: {key['command']})")
        if verdict.get("not_rebuilt"):
            print(f"not rebuilt, not compared: {verdict['not_rebuilt']}")
        if not verdict["passed"]:
            print(f"verdict file: {path}")
            # The key and its values first (a log panel cuts a long line), then the whole line.
            raise AirflowFailException(f"{headline(verdict)}\n{failure_line(verdict)}")
        settle(settings, ti.xcom_pull(task_ids="pick_interval", key="settles") or [])
        return {"passed": True, "verdict": str(path), "data_docs": docs_link(verdict)}

    pick_interval() >> verify >> publish_data_docs()


verify_agreement()
