"""The DAGs on the Airflow Terraform deploys: MWAA's version (terraform/mwaa-constraints/<version>/,
kept equal to the orchestration module's by tests/infra/test_mwaa_requirements.py), installed with
MWAA's requirements and constraints in a venv of its own (`make mwaa-venv`) on MWAA's Python
(`airflow_python` of infra/cloud-versions.json). Every DAG file imports and every DAG serializes as
its scheduler would store it, the platform's plugin loads, and nothing pulls Spark onto MWAA. (The
suite's own Airflow is newer: tests/dags run the DAGs there.)"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from eo.cloud.versions import cloud_versions
from eo.runtime.config import REPO_ROOT
from tests.infra.test_mwaa_requirements import deployed_airflow_version

pytestmark = pytest.mark.integration

# EO_MWAA_VENV: another venv built by `make mwaa-venv MWAA_VENV=...` (a worktree's own).
MWAA_PYTHON = Path(os.environ.get("EO_MWAA_VENV", REPO_ROOT / ".cache" / "mwaa-venv")) / "bin" / "python"

PROBE = """
import importlib, importlib.metadata, json, sys, airflow
from airflow.models.dagbag import DagBag
from airflow.serialization.serialized_objects import SerializedDAG

bag = DagBag(dag_folder="dags", include_examples=False)
serialized, timetables = {}, {}
for dag_id, dag in bag.dags.items():
    again = SerializedDAG.from_dict(SerializedDAG.to_dict(dag))
    serialized[dag_id] = sorted(again.task_ids)
    timetables[dag_id] = f"{type(again.timetable).__module__}.{type(again.timetable).__qualname__}"
importlib.import_module("eo_platform")
print(json.dumps({
    "timetables": timetables,
    "version": airflow.__version__,
    "python": "%d.%d" % sys.version_info[:2],
    "errors": {f: e.strip().splitlines()[-1] for f, e in bag.import_errors.items()},
    "dags": serialized,
    "spark": [d.metadata["Name"] for d in importlib.metadata.distributions()
              if d.metadata["Name"].lower() in ("pyspark", "apache-airflow-providers-apache-spark")],
}))
"""


def test_the_dags_import_and_serialize_on_the_airflow_mwaa_runs(tmp_path):
    assert MWAA_PYTHON.exists(), "no venv of MWAA's Airflow: make mwaa-venv (make test builds it)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env |= {
        "AIRFLOW_HOME": str(tmp_path),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{tmp_path / 'airflow.db'}",
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO_ROOT / "plugins"),  # MWAA's: plugins.zip
        "PYTHONPATH": os.pathsep.join(str(REPO_ROOT / p) for p in ("", "dags", "plugins")),
    }
    done = subprocess.run(
        [str(MWAA_PYTHON), "-c", PROBE], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (tmp_path / "runs.log").write_text(done.stdout + done.stderr)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["version"] == deployed_airflow_version()
    assert found["python"] == cloud_versions().airflow_python, "the MWAA venv is on another Python: make mwaa-venv"
    assert found["errors"] == {}
    assert set(found["dags"]) == {"rebuild_derived", "verify_agreement", "stream_supervisor", "lake_maintenance"}
    assert "rebuild_interval" in found["dags"]["rebuild_derived"] and "verify" in found["dags"]["verify_agreement"]
    # Read back through the plugin that registers it (plugins.zip on MWAA): runs named by their day.
    assert found["timetables"]["rebuild_derived"] == "eo_timetables.CoveredDayTimetable"
    assert found["spark"] == []


# One run of each DAG, as MWAA's scheduler would make it: dag.test() on MWAA's Airflow, the tasks in
# its venv (no pyspark there), their AWS calls against moto's server (S3, DynamoDB, EMR Serverless,
# whose job runs end SUCCESS at once) and Kafka a real local broker without MSK's IAM signing.
RUNS = """
import datetime as dt, json, sys
from airflow.models.dagbag import DagBag

bag = DagBag(dag_folder="dags", include_examples=False)
day = dt.datetime(2026, 11, 20, tzinfo=dt.timezone.utc)
options = {
    "rebuild_derived": {"logical_date": day},
    "verify_agreement": {"run_conf": {"interval": "2026-11-20T00:00:00Z/2026-11-21T00:00:00Z"}},
    "lake_maintenance": {},
    "stream_supervisor": {},
}
found = {}
for dag_id, given in options.items():
    dag = bag.dags[dag_id]
    for each in dag.tasks:  # one try: a failure is reported at once, not after the retries' delays
        each.retries = 0
    run = dag.test(**given)
    tasks = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
    found[dag_id] = {"state": str(run.state), "tasks": tasks, "interval": run.data_interval_start.isoformat()}
    found[dag_id]["run_id"] = run.run_id
from airflow.listeners.listener import get_listener_manager
from airflow.models.dagrun import DagRun
from airflow.utils.session import create_session
# dag.test() calls no listener: each run is handed, in a session, to the listeners the plugins
# register on this Airflow (plugins.zip on MWAA), as its scheduler does when a run starts.
with create_session() as session:
    for dag_id in options:
        stored = session.query(DagRun).filter(DagRun.dag_id == dag_id, DagRun.run_id == found[dag_id]["run_id"]).one()
        stored.note = None
        get_listener_manager().hook.on_dag_run_running(dag_run=stored, msg="started")
        found[dag_id]["note"] = stored.note
    session.rollback()
found["verify_agreement"]["runs"] = sorted(r.run_id for r in DagRun.find(dag_id="verify_agreement"))
print(json.dumps(found))
"""


# The tasks of these runs that may end skipped, with the reason their skip must give (in the runs'
# log); any other skip fails. moto's EMR Serverless job runs end SUCCESS without running anything,
# so the rebuild of 2026-11-20 writes no table: verify_agreement's pick_interval answers from the
# tables' logs that the day was not rebuilt, and the verification it would submit is skipped
# (docs/cloud.md: what this test does not cover).
NOT_REBUILT = "not rebuilt: 2026-11-20, nothing to compare"
MAY_SKIP: dict[str, str] = {
    "verify_agreement.verify": NOT_REBUILT,  # answered without Spark (answered_by="pick_interval")
    "verify_agreement.publish_data_docs": NOT_REBUILT,  # repeats the answer as its skip
}


@pytest.fixture
def moto_aws(tmp_path, monkeypatch):
    """moto's server with the buckets, log store table and EMR Serverless application Terraform
    makes, and the job artifacts uploaded as `terraform apply` would (the job drivers read them)."""
    from eo.cloud import emr_serverless
    from eo.runtime.config import config_file, load_settings
    from infra.s3 import LocalS3
    from tests.conftest import WORKER

    outputs = tmp_path / "outputs.json"
    monkeypatch.setenv("EO_TF_OUTPUTS", str(outputs))
    server = LocalS3.default(port=15155 + WORKER)  # its own server: local-s3's, on another port
    config = tmp_path / "platform.toml"
    text = config_file().read_text().replace("127.0.0.1:5055", f"127.0.0.1:{server.port}")
    # local-s3 with the aws environment's job runner: every Spark task an EMR Serverless job run
    config.write_text(text.replace("[env.local-s3]\n", '[env.local-s3]\njob_runner = "emr-serverless"\n', 1))
    monkeypatch.setenv("EO_CONFIG", str(config))
    server.start()
    try:
        emr, role = server.client("emr-serverless"), "arn:aws:iam::123456789012:role/eo-spark"
        # A release label moto knows; the outputs name the matrix's.
        app = emr.create_application(name="eo", releaseLabel="emr-7.0.0", type="SPARK")["applicationId"]
        # moto's ListJobRuns refuses an application no job run has started on yet (ResourceNotFound):
        # one run, of a name no DAG uses, before a task lists them.
        emr.start_job_run(
            applicationId=app, executionRoleArn=role, jobDriver={"sparkSubmit": {"entryPoint": "s3://x/y"}}
        )
        values = json.loads(outputs.read_text())
        values.update(emr_application_id={"value": app}, emr_release_label={"value": cloud_versions().emr_release})
        values.update(spark_role_arn={"value": role})
        outputs.write_text(json.dumps(values))
        env = {"EO_ENV": "local-s3", "EO_JOB_RUNNER": "emr-serverless", "EO_AWS_ENDPOINT": server.endpoint}
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        settings = load_settings("local-s3")
        emr_serverless.upload(settings, server.client("s3"), log=lambda _: None, folder=tmp_path / "artifacts")
        yield server, env | {"EO_TF_OUTPUTS": str(outputs), "EO_CONFIG": str(config)}
    finally:
        server.stop()


@pytest.mark.slow
def test_each_dag_runs_once_on_the_airflow_mwaa_runs(tmp_path, moto_aws, kafka):
    server, aws_env = moto_aws
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "EO_"))}
    env |= aws_env | {
        "AIRFLOW_HOME": str(tmp_path / "airflow"),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{tmp_path / 'airflow.db'}",
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO_ROOT / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO_ROOT / "plugins"),
        "PYTHONPATH": os.pathsep.join(str(REPO_ROOT / p) for p in ("", "dags", "plugins")),
        "AWS_ENDPOINT_URL": server.endpoint,
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
        "EO_KAFKA_BOOTSTRAP": kafka.bootstrap,
        "EO_REPORTS_ROOT": str(tmp_path / "reports"),
    }
    # The metadata database, and the DAGs and their assets in it, as MWAA's DAG processor leaves them.
    for command in (["db", "migrate"], ["dags", "reserialize"]):
        done = subprocess.run(
            [str(MWAA_PYTHON), "-m", "airflow", *command], cwd=REPO_ROOT, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-3000:]
    done = subprocess.run(
        [str(MWAA_PYTHON), "-c", RUNS], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-5000:]
    (tmp_path / "runs.log").write_text(done.stdout + done.stderr)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    # Every task, not the run's state: a last task with trigger_rule all_done leaves a run green
    # whose first task failed (verify_agreement's publish_data_docs).
    # A skip is a failure unless MAY_SKIP names the task and why: a task that skips for a reason
    # nobody wrote down (a DAG that no longer reaches its work) must not pass as a success.
    states = [(f"{dag}.{task}", state) for dag, run in found.items() for task, state in run["tasks"].items()]
    failed = [
        f"{task}: {state}"
        for task, state in states
        if state != "success" and not (state == "skipped" and task in MAY_SKIP)
    ]
    assert failed == [], f"{failed}: see {tmp_path / 'runs.log'}"
    # A run triggered from MWAA's UI keeps Airflow 3.0's manual__<trigger time> id: its note says
    # the day it covers (docs/airflow.md), written by the plugin's listener on MWAA's Airflow too.
    assert found["rebuild_derived"]["note"] == "rebuilds 2026-11-20 into rebuild"
    assert found["verify_agreement"]["note"] == "verifies 2026-11-20"
    assert found["stream_supervisor"]["note"] is None and found["lake_maintenance"]["note"] is None
    for task, state in states:
        if state == "skipped":
            assert f"reason='{MAY_SKIP[task]}" in done.stdout + done.stderr, f"{task} skipped for another reason"
    assert {d: run["state"] for d, run in found.items()} == dict.fromkeys(found, "success")
    # A manual run covers the day of its logical date, and the rebuild started the verification
    # of that day, named after it (the run it started stays queued: dag.test runs one run).
    assert found["rebuild_derived"]["interval"].startswith("2026-11-20T00:00:00"), found["rebuild_derived"]
    assert any(r.startswith("rebuilt__2026-11-20_by_") for r in found["verify_agreement"]["runs"]), found
