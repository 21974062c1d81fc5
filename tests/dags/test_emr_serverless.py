"""The cloud job path against moto's AWS: artifacts uploaded where the job driver points, a DAG
task becomes an EMR Serverless job run of the same module, and a failed run fails the task."""

import json
import re

import pytest

from eo.cloud import artifact_store, emr_serverless
from eo.cloud.outputs import emr_runtime
from eo.runtime.config import REPO_ROOT, load_settings

pytestmark = pytest.mark.unit

REGION = "eu-west-1"


@pytest.fixture
def aws(monkeypatch, tmp_path):
    """moto's in-process AWS with the buckets and application Terraform would have made, and
    conf/terraform-outputs/aws.json as `terraform output -json` writes it."""
    import boto3
    from moto import mock_aws

    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        for bucket in ("eo-lake", "eo-checkpoints", "eo-artifacts", "eo-dags"):
            s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
        emr = boto3.client("emr-serverless", region_name=REGION)
        app = emr.create_application(name="eo", releaseLabel="emr-7.0.0", type="SPARK")[
            "applicationId"
        ]  # a label moto knows
        outputs = {
            "region": REGION,
            "lake_bucket": "eo-lake",
            "checkpoint_bucket": "eo-checkpoints",
            "artifacts_bucket": "eo-artifacts",
            "dags_bucket": "eo-dags",
            "log_store_table": "eo-delta-log",
            "kms_key_arn": "arn:aws:kms:eu-west-1:123456789012:key/k",
            "spark_role_arn": "arn:aws:iam::123456789012:role/eo-spark",
            "airflow_role_arn": "arn:aws:iam::123456789012:role/eo-airflow",
            "emr_application_id": app,
            "emr_release_label": emr_runtime().release_label,
            "kafka_bootstrap": "boot-abc.kafka-serverless.eu-west-1.amazonaws.com:9098",
        }
        path = tmp_path / "aws.json"
        path.write_text(json.dumps({k: {"value": v, "type": "string"} for k, v in outputs.items()}))
        monkeypatch.setenv("EO_TF_OUTPUTS", str(path))
        monkeypatch.setenv("EO_ENV", "aws")
        yield {"s3": s3, "emr": emr, "app": app}


def test_upload_puts_every_artifact_the_job_driver_names(aws, tmp_path):
    settings = load_settings("aws")
    keys = emr_serverless.upload(settings, aws["s3"], log=lambda _: None, folder=tmp_path / "artifacts")
    stored = {o["Key"] for o in aws["s3"].list_objects_v2(Bucket="eo-artifacts", MaxKeys=1000)["Contents"]}
    assert set(keys) == stored
    driver = emr_serverless.job_driver(settings, "jobs/rebuild.py", ["--start", "2026-11-20"])["sparkSubmit"]
    named = {driver["entryPoint"]}
    params = dict(p.strip().split("=", 1) for p in driver["sparkSubmitParameters"].split("--conf ") if p.strip())
    jars = params["spark.jars"].split(",")
    runtime = emr_runtime()
    # The release image's own log store jar is named by its local path; everything else was uploaded.
    assert runtime.log_store_jar in jars
    named |= {j for j in jars if j != runtime.log_store_jar} | set(params["spark.submit.pyFiles"].split(","))
    named |= {a.split("#")[0] for a in params["spark.archives"].split(",")}
    assert named <= {f"s3://eo-artifacts/{k}" for k in stored}
    for name in runtime.jar_names().values():
        assert f"s3://eo-artifacts/jars/{name}" in jars
    assert params["spark.emr-serverless.driverEnv.EO_ENV"] == "aws"


@pytest.fixture
def uploaded(aws, tmp_path):
    """The artifacts as `python -m eo.cloud.emr_serverless upload` leaves them: job drivers read its manifest."""
    emr_serverless.upload(load_settings("aws"), aws["s3"], log=lambda _: None, folder=tmp_path / "artifacts")
    return aws


def test_a_dag_task_runs_the_same_module_as_a_job_run(uploaded, monkeypatch):
    aws = uploaded
    monkeypatch.syspath_prepend(str(REPO_ROOT / "dags"))  # as the DAG processor sees it
    from eo_common.platform import PlatformSparkSubmitOperator

    task = PlatformSparkSubmitOperator(
        task_id="rebuild_interval", script="jobs/rebuild.py", application_args=["--target=rebuild"]
    )
    # moto answers ListJobRuns for an application only once it has had a run (AWS: an empty list).
    aws["emr"].start_job_run(applicationId=aws["app"], executionRoleArn="arn:aws:iam::123456789012:role/r",
                             name="another", jobDriver={"sparkSubmit": {"entryPoint": "s3://x/y.py"}})  # fmt: skip
    run_id = task.execute({"ti": TaskInstance()})
    job = aws["emr"].get_job_run(applicationId=aws["app"], jobRunId=run_id)["jobRun"]
    assert job["state"] == "SUCCESS" and job["name"] == "rebuild_derived.rebuild_interval.manual__1"
    assert job["executionRole"] == "arn:aws:iam::123456789012:role/eo-spark"
    submit = job["jobDriver"]["sparkSubmit"]
    entry = artifact_store.uploaded_application("eo-artifacts", aws["s3"]).entry_point("jobs/rebuild.py")
    assert submit["entryPoint"] == f"s3://eo-artifacts/{entry}"
    assert re.fullmatch(r"entrypoints/[0-9a-f]{16}/jobs/rebuild\.py", entry)  # named by its content
    assert submit["entryPointArguments"] == ["--target=rebuild"]


class TaskInstance:
    dag_id, task_id, run_id = "rebuild_derived", "rebuild_interval", "manual__1"


class FailingRuns:
    """An EMR Serverless client whose runs fail: moto's always succeed."""

    def start_job_run(self, **_):
        return {"jobRunId": "run-1"}

    def get_job_run(self, **_):
        return {"jobRun": {"state": "FAILED", "stateDetails": "Job failed, ExitCode: 1"}}


def test_a_failed_job_run_raises_with_its_details(uploaded):
    with pytest.raises(emr_serverless.JobRunFailed, match="run-1 ended FAILED: Job failed, ExitCode: 1"):
        emr_serverless.run(load_settings("aws"), "jobs/verify.py", [], client=FailingRuns(), log=lambda _: None)


class Runs:
    """An EMR Serverless client with runs in the states given: records what is cancelled."""

    def __init__(self, runs: dict[str, tuple[str, str]], then: str = "SUCCESS", poll=None) -> None:
        self.runs, self.then, self.poll, self.cancelled = dict(runs), then, poll, []

    def get_paginator(self, operation):
        assert operation == "list_job_runs"
        runs = self.runs

        class Pages:
            def paginate(self, applicationId, states):
                yield {"jobRuns": [{"id": i, "name": n, "state": s} for i, (n, s) in runs.items() if s in states]}

        return Pages()

    def start_job_run(self, name, **_):
        self.runs["new"] = (name, "RUNNING")
        return {"jobRunId": "new"}

    def get_job_run(self, jobRunId, **_):
        if self.poll:
            self.poll()
        return {"jobRun": {"state": self.then}}

    def cancel_job_run(self, jobRunId, **_):
        self.cancelled.append(jobRunId)


def test_a_retry_cancels_what_its_earlier_try_left_running_and_nothing_else(uploaded):
    name = "rebuild_derived.rebuild_interval.manual__1"
    client = Runs(
        {
            "orphan": (name, "RUNNING"),
            "queued": (name, "QUEUED"),
            "done": (name, "SUCCESS"),
            "other": ("rebuild_derived.rebuild_interval.manual__2", "RUNNING"),
            "stream": ("eo-stream", "RUNNING"),
        }
    )
    lines: list[str] = []
    run_id = emr_serverless.run(
        load_settings("aws"), "jobs/rebuild.py", [], client=client, log=lines.append, name=name, replace_earlier=True
    )
    assert run_id == "new" and sorted(client.cancelled) == ["orphan", "queued"]
    assert any("cancelled job run orphan" in line and "earlier try" in line for line in lines), lines


@pytest.mark.parametrize("ending", [KeyboardInterrupt, SystemExit, RuntimeError])
def test_whatever_ends_the_wait_cancels_the_run(uploaded, ending):
    def killed():
        raise ending("the task was killed")

    client = Runs({}, then="RUNNING", poll=killed)
    with pytest.raises(ending):
        emr_serverless.run(load_settings("aws"), "jobs/verify.py", [], client=client, log=lambda _: None)
    assert client.cancelled == ["new"]


def test_a_wait_past_its_timeout_cancels_the_run_and_says_so(uploaded):
    client = Runs({}, then="RUNNING")
    with pytest.raises(emr_serverless.JobRunFailed, match="still RUNNING after 0 s; cancelled it"):
        emr_serverless.run(
            load_settings("aws"), "jobs/verify.py", [], client=client, log=lambda _: None, timeout=0, poll_seconds=0
        )
    assert client.cancelled == ["new"]


def test_a_killed_task_cancels_its_job_run(uploaded, monkeypatch):
    monkeypatch.syspath_prepend(str(REPO_ROOT / "dags"))
    from eo_common.platform import PlatformSparkSubmitOperator

    client = Runs({}, then="RUNNING")
    task = PlatformSparkSubmitOperator(task_id="verify", script="jobs/verify.py")
    boto = emr_serverless.aws_client
    monkeypatch.setattr(
        emr_serverless, "aws_client", lambda kind, region: client if kind == "emr-serverless" else boto(kind, region)
    )

    def kill_while_waiting():
        task.on_kill()  # what Airflow calls on the task when it is killed
        raise KeyboardInterrupt

    client.poll = kill_while_waiting
    with pytest.raises(KeyboardInterrupt):
        task.execute({"ti": TaskInstance()})
    assert client.cancelled == ["new", "new"]  # on_kill, then the wait's own ending: cancelling twice is harmless
