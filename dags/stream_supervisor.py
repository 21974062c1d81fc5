"""
### stream_supervisor

Every five minutes: are the streaming queries alive and fresh?

- **inspect**: is the streaming job running; the last committed micro-batch and how long ago it
  committed; lag per Kafka partition (end offsets against the checkpoint's offsets).
- **restart_if_needed**: a dead job, or one with lag that has not committed for
  `max_silence_minutes`, counted from its last commit or from when the running instance started,
  whichever is later, is restarted; it resumes from its checkpoints. It never fences anything but
  a dead stream: while a reset or a rebuild into main holds the stream's lease, or a stream this
  service does not run still renews it, it waits and says so in one line naming the holder. A job stopped by hand
  (`make stream-stop`) is left stopped until `make stream-start`. The job it starts runs outside
  Airflow (its own session, none of Airflow's environment): stopping or restarting Airflow leaves
  it running.

The job is what the environment runs (`ops/stream_service.py`): a local spark-submit process
(a warm standby may take over), or on AWS the EMR Serverless job run `eo-stream`; the checkpoint
is read where it is (local disk or S3).
- **stream_restarted**: green only in a run that started the stream again (or whose standby took
  over), skipped in every other: in the grid, its row shows each restart at a glance. That run's
  note says what was restarted and why ("restarted the stream: restarted as pid 4242 (the stream
  was not running) ..."); a run that waited for a reset or a rebuild says that in its note.
- **check_lag**: fails loudly when lag exceeds `max_lag_records`.
"""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import Param, dag, task
from eo_common.platform import DEFAULT_ARGS, START_DATE, TAGS


@dag(
    dag_id="stream_supervisor",
    description="Every 5 minutes: is the stream alive and fresh; restart it if dead or stalled",
    schedule=timedelta(minutes=5),
    start_date=START_DATE,
    catchup=False,
    max_active_runs=1,
    default_args={**DEFAULT_ARGS, "retries": 1, "retry_delay": timedelta(seconds=30)},
    tags=[*TAGS, "streaming", "operations"],
    doc_md=__doc__,
    params={
        "max_lag_records": Param(500_000, type="integer", minimum=0, description="Kafka records behind"),
        "max_silence_minutes": Param(15, type="integer", minimum=1, description="no commit while behind"),
        "restart": Param(True, type="boolean", description="restart a dead or stalled job"),
    },
)
def stream_supervisor():
    # One XCom for the whole report: `-> dict` alone would push each key apart, and Airflow 3.0
    # (MWAA's) refuses a key whose value is None (422), as `held` is when nothing holds the lease.
    @task(multiple_outputs=False)
    def inspect() -> dict:
        from eo.runtime.config import load_settings
        from eo.runtime.monitoring import health
        from ops.stream_service import lease_holder, observe, stream_service

        settings = load_settings()
        report = observe(stream_service(settings), health(settings), lease=lease_holder(settings))
        if report["lease"] is not None:
            print(f"the stream's lease: {report['lease']['holder']} ({report['lease']['kind']})")
        if report["seconds_since_start"] is not None:
            print(f"running instance started {report['seconds_since_start']:.0f} s ago")
        for name, q in report["queries"].items():
            print(f"{name}: batch {q['last_batch']}, {q['seconds_since_commit']} s since commit, lag {q['lag']}")
        return report

    @task
    def restart_if_needed(report: dict, params=None) -> str:
        from eo.runtime.config import load_settings
        from ops.stream_service import stream_service, supervise

        outcome = supervise(stream_service(load_settings()), report, params["max_silence_minutes"], params["restart"])
        print(outcome)
        return outcome

    @task
    def stream_restarted(outcome: str) -> str:
        """Succeeds only when restart_if_needed started the stream again; skipped otherwise, with its line."""
        from eo_common.airflow_api import AirflowSkipException

        from ops.stream_service import restarted

        if not restarted(outcome):
            raise AirflowSkipException(f"no restart: {outcome}")
        print(f"the stream was started again: {outcome}")
        return outcome

    @task
    def check_lag(report: dict, params=None) -> int:
        from eo_common.airflow_api import AirflowFailException

        from eo.runtime.config import STREAM_QUERY

        stream = report["queries"][STREAM_QUERY]
        if stream["lag"] > params["max_lag_records"]:
            raise AirflowFailException(
                f"the stream is {stream['lag']} records behind Kafka (limit {params['max_lag_records']}); "
                f"per partition: {stream['lag_by_partition']}"
            )
        return stream["lag"]

    report = inspect()
    outcome = restart_if_needed(report)
    stream_restarted(outcome)
    outcome >> check_lag(report)


stream_supervisor()
