"""The cloud job path against moto's AWS: artifacts uploaded where the job driver points, a DAG
task becomes an EMR Serverless job run of the same module, and a failed run fails the task."""

import json

import pytest

from eo.cloud import emr_serverless
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
    driver = emr_serverless.job_driver(settings, "batch/rebuild.py", ["--start", "2026-11-20"])["sparkSubmit"]
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
        task_id="rebuild_interval", script="batch/rebuild.py", application_args=["--target=rebuild"]
    )
    run_id = task.execute({})
    job = aws["emr"].get_job_run(applicationId=aws["app"], jobRunId=run_id)["jobRun"]
    assert job["state"] == "SUCCESS"
    assert job["executionRole"] == "arn:aws:iam::123456789012:role/eo-spark"
    submit = job["jobDriver"]["sparkSubmit"]
    assert submit["entryPoint"] == "s3://eo-artifacts/entrypoints/batch/rebuild.py"
    assert submit["entryPointArguments"] == ["--target=rebuild"]


class FailingRuns:
    """An EMR Serverless client whose runs fail: moto's always succeed."""

    def start_job_run(self, **_):
        return {"jobRunId": "run-1"}

    def get_job_run(self, **_):
        return {"jobRun": {"state": "FAILED", "stateDetails": "Job failed, ExitCode: 1"}}


def test_a_failed_job_run_raises_with_its_details(uploaded):
    with pytest.raises(emr_serverless.JobRunFailed, match="run-1 ended FAILED: Job failed, ExitCode: 1"):
        emr_serverless.run(load_settings("aws"), "batch/verify.py", [], client=FailingRuns(), log=lambda _: None)
