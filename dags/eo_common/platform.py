"""Defaults, assets and the Spark operator every DAG of this platform uses.

Nothing here touches the disk or imports Spark at parse time; the operator resolves jars,
config and environment when it runs.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Asset

# The checkout the jobs run from (DAG files live in its dags/ folder).
HOME = Path(os.environ.get("EO_HOME") or Path(__file__).resolve().parents[2])

START_DATE = datetime(2026, 11, 1)
TAGS = ["effectively-once"]


def announce_scope(context) -> None:
    """The first line of each task's own log: the event time its run covers (as the run's note)."""
    from eo.core.intervals import run_scope
    from eo.runtime.quality.ledger import scope_inputs

    run = context["dag_run"]
    events = [e for batch in (context.get("triggering_asset_events") or {}).values() for e in batch]
    rebuilt = scope_inputs(run.dag_id, events)
    conf = {**(run.conf or {}), **dict(context.get("params") or {})}
    scope = run_scope(
        run.dag_id, conf, run.data_interval_start, run.data_interval_end, rebuilt, run.logical_date or run.run_after
    )
    if scope:
        print(f"this run {scope}", flush=True)


DEFAULT_ARGS: dict[str, Any] = {
    "on_execute_callback": announce_scope,
    "owner": "data-platform",
    "retries": 2,
    "retry_delay": timedelta(minutes=1),
    "retry_exponential_backoff": True,
    "max_retry_delay": timedelta(minutes=10),
}

# Emitted by rebuild_derived for every interval it rebuilt into the comparison namespace;
# its extra carries the interval ("START/END" or "all").
GOLD_REBUILT = Asset(name="gold_rebuilt", uri="file:///effectively-once/_rebuild/gold")


class SparkSubmitLauncher:
    """spark-submit through the operator itself, with the platform's jars, conf and environment."""

    def execute(self, operator: PlatformSparkSubmitOperator, settings, context):
        from eo.runtime.submit import build_pyfiles, job_env, submit_conf

        conf = submit_conf(settings, operator.conf)
        operator.jars = conf.pop("spark.jars")
        operator.conf = conf
        operator.py_files = str(build_pyfiles())
        operator.env_vars = {**job_env(), **(operator.env_vars or {})}
        return SparkSubmitOperator.execute(operator, context)


class EmrServerlessLauncher:
    """The same job module as an EMR Serverless job run, waited for (eo/cloud/emr_serverless.py).
    The run is named after the task instance (DAG, task, run): a retry cancels what its earlier
    try left running before it starts, and a task killed or timed out cancels its run."""

    def execute(self, operator: PlatformSparkSubmitOperator, settings, context):
        from eo.cloud import emr_serverless

        def started(run_id: str) -> None:
            operator.emr_job_run = run_id  # for on_kill

        ti = context["ti"]
        return emr_serverless.run(
            settings, operator.script, list(operator.application_args or []), operator.conf,
            name=f"{ti.dag_id}.{ti.task_id}.{ti.run_id}", replace_earlier=True, started=started,
        )  # fmt: skip


# The environment (eo/runtime/environment.py) picks one, once per task.
LAUNCHERS = {"spark-submit": SparkSubmitLauncher, "emr-serverless": EmrServerlessLauncher}


class PlatformSparkSubmitOperator(SparkSubmitOperator):
    """One of the platform's job modules, launched the way the environment runs Spark jobs.

    Locally: spark-submit against the `spark_default` connection (its master: local[*] or a
    cluster), with the jars, driver settings and environment `eo.runtime.submit` gives the command line
    and the demo too. On AWS (`job_runner = "emr-serverless"`): an EMR Serverless job run of the
    same module.
    """

    def __init__(self, *, script: str, answered_by: str | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("conn_id", "spark_default")
        kwargs.setdefault("name", f"eo-{kwargs['task_id']}")
        super().__init__(application=str(HOME / script), **kwargs)
        self.script = script
        # A task whose XCom `answered` (one line) means the job has nothing to do: skipped with that
        # line, no Spark driver started (verify_agreement's pick_interval answers an empty day).
        self.answered_by = answered_by

    def execute(self, context):
        from airflow.sdk.exceptions import AirflowSkipException

        from eo.runtime.config import load_settings
        from eo.runtime.environment import environment

        if self.answered_by and (line := context["ti"].xcom_pull(task_ids=self.answered_by, key="answered")):
            raise AirflowSkipException(line)
        settings = load_settings()
        return environment(settings).job_runner(LAUNCHERS)().execute(self, settings, context)

    def on_kill(self) -> None:
        """A killed task's EMR Serverless job run is cancelled; a spark-submit is killed as the
        Spark provider does."""
        if run_id := getattr(self, "emr_job_run", None):
            from eo.cloud import emr_serverless
            from eo.runtime.config import load_settings

            emr_serverless.cancel(load_settings(), run_id)
            self.log.info("cancelled EMR Serverless job run %s: its task was killed", run_id)
            return
        super().on_kill()
