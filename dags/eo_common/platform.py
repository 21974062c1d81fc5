"""Defaults, assets and the Spark operator every DAG of this platform uses.

Nothing here touches the disk or imports Spark at parse time; the operator resolves jars,
config and environment when it runs. It is a plain BaseOperator: the Spark provider (and the
pyspark it pulls) is needed only where jobs are spark-submitted, never on MWAA.
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from airflow.sdk import Asset, BaseOperator

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
    """spark-submit through the Spark provider's hook (its connection: the master), with the
    platform's jars, conf and environment."""

    def execute(self, operator: PlatformSparkSubmitOperator, settings, context):
        from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

        from eo.runtime.cli import ONE_LINE_FILE
        from eo.runtime.submit import build_pyfiles, job_env, submit_conf

        conf = submit_conf(settings, operator.conf)
        with tempfile.TemporaryDirectory(prefix="eo-one-line-") as scratch:
            one_line = os.path.join(scratch, "one-line.json")
            operator.submit_hook = SparkSubmitHook(
                conf=conf, conn_id=operator.conn_id, jars=conf.pop("spark.jars"), py_files=str(build_pyfiles()),
                name=operator.name, application_args=list(operator.application_args or []),
                env_vars={**job_env(), **(operator.env_vars or {}), ONE_LINE_FILE: one_line},
            )  # fmt: skip
            try:
                operator.submit_hook.submit(str(HOME / operator.script))
            except Exception as exc:
                raise_one_line(one_line, exc)
                raise


def raise_one_line(path: str, exc: Exception) -> None:
    """A job that failed with a known one line (eo/runtime/cli.py): the task fails with that line
    first, not spark-submit's command. A refusal that retrying cannot change (the stream holds
    the live tables) fails without retries; else the task's retries apply. Nothing recorded:
    returns, and the caller raises `exc` as it was."""
    from eo.runtime.cli import read_one_line
    from eo_common.airflow_api import AirflowException, AirflowFailException

    found = read_one_line(path)
    if found is None:
        return
    line = f"{found['line']} (exit code {found['code']})"
    if not found.get("retry", True):
        raise AirflowFailException(f"{line}; not retried: trying again will not change it") from exc
    raise AirflowException(line) from exc


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


class PlatformSparkSubmitOperator(BaseOperator):
    """One of the platform's job modules, launched the way the environment runs Spark jobs.

    Locally: spark-submit against the `spark_default` connection (its master: local[*] or a
    cluster), with the jars, driver settings and environment `eo.runtime.submit` gives the command line
    and the demo too. On AWS (`job_runner = "emr-serverless"`): an EMR Serverless job run of the
    same module.
    """

    template_fields = ("application_args", "conf", "env_vars", "name")

    def __init__(
        self,
        *,
        script: str,
        application_args: list[str] | None = None,
        conf: dict[str, str] | None = None,
        env_vars: dict[str, str] | None = None,
        conn_id: str = "spark_default",
        name: str | None = None,
        answered_by: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.script = script
        self.application_args = application_args or []
        self.conf = conf or {}
        self.env_vars = env_vars or {}
        self.conn_id = conn_id
        self.name = name or f"eo-{self.task_id}"
        # A task whose XCom `answered` (one line) means the job has nothing to do: skipped with that
        # line, no Spark driver started (verify_agreement's pick_interval answers an empty day).
        self.answered_by = answered_by
        self.submit_hook = None  # the running spark-submit (local), for on_kill
        self.emr_job_run: str | None = None  # the running EMR Serverless job run, for on_kill

    def execute(self, context):
        from eo.runtime.config import load_settings
        from eo.runtime.environment import environment
        from eo_common.airflow_api import AirflowSkipException

        if self.answered_by and (line := context["ti"].xcom_pull(task_ids=self.answered_by, key="answered")):
            raise AirflowSkipException(line)
        settings = load_settings()
        return environment(settings).job_runner(LAUNCHERS)().execute(self, settings, context)

    def on_kill(self) -> None:
        """A killed task's EMR Serverless job run is cancelled, its spark-submit killed (with the
        driver, as the Spark provider's hook does)."""
        if run_id := self.emr_job_run:
            from eo.cloud import emr_serverless
            from eo.runtime.config import load_settings

            emr_serverless.cancel(load_settings(), run_id)
            self.log.info("cancelled EMR Serverless job run %s: its task was killed", run_id)
        if self.submit_hook is not None:
            self.submit_hook.on_kill()
