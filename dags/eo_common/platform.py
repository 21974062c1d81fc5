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
DEFAULT_ARGS: dict[str, Any] = {
    "owner": "data-platform",
    "retries": 2,
    "retry_delay": timedelta(minutes=1),
    "retry_exponential_backoff": True,
    "max_retry_delay": timedelta(minutes=10),
}

# Emitted by rebuild_derived for every interval it rebuilt into the comparison namespace;
# its extra carries the interval ("START/END" or "all").
GOLD_REBUILT = Asset(name="gold_rebuilt", uri="file:///effectively-once/_rebuild/gold")


class PlatformSparkSubmitOperator(SparkSubmitOperator):
    """spark-submit of one of the platform's job modules against the `spark_default` connection.

    Jars, driver settings and environment come from `jobs.submit` at run time, the same ones
    the command line and the demo use; the connection decides the master (local[*] or a cluster).
    In an environment whose `job_runner` is `emr-serverless`, the task is an EMR Serverless job
    run of the same module instead.
    """

    def __init__(self, *, script: str, **kwargs: Any) -> None:
        kwargs.setdefault("conn_id", "spark_default")
        kwargs.setdefault("name", f"eo-{kwargs['task_id']}")
        super().__init__(application=str(HOME / script), **kwargs)
        self.script = script

    def execute(self, context):
        from jobs.config import load_settings
        from jobs.submit import build_pyfiles, job_env, submit_conf

        settings = load_settings()
        if settings.job_runner == "emr-serverless":  # the same job module, as an EMR Serverless job run
            from jobs import emr_serverless

            return emr_serverless.run(settings, self.script, list(self.application_args or []), self.conf)
        conf = submit_conf(settings, self.conf)
        self.jars = conf.pop("spark.jars")
        self.conf = conf
        self.py_files = str(build_pyfiles())
        self.env_vars = {**job_env(), **(self.env_vars or {})}
        return super().execute(context)
