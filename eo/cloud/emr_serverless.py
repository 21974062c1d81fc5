"""The cloud way to run a job module: the same spark-submit, as an EMR Serverless job run.

    python -m eo.cloud.emr_serverless build                       # make artifacts: build/artifacts
    python -m eo.cloud.emr_serverless upload                      # the same and the outputs, without Terraform
    python -m eo.cloud.emr_serverless publish --bucket B --region R   # what terraform apply runs (no manifests)
    python -m eo.cloud.emr_serverless run jobs/rebuild.py --start 2026-11-20 --end 2026-11-21
    python -m eo.cloud.emr_serverless run --detach jobs/stream.py run   # the stream: start, do not wait

Everything it addresses comes from Terraform's outputs (conf/terraform-outputs/<env>.json): the
artifacts bucket, the application id and its release, the Spark runtime role. The jars are the ones
`make jars-emr` resolves for that release (infra/maven/emr/pom.xml), never the local Spark's: the
upload and every job driver refuse jars or an application release that disagree with the pom. The
upload records the jars it made in a manifest next to them, and the application's code,
configuration and entry points (named by their content, eo/cloud/artifacts.py) in another: job
drivers read both (on MWAA too) and name those keys, so a job run keeps its code until it ends.
`terraform apply` runs `publish` (the upload of build/artifacts that never replaces or deletes an
object) and then uploads the manifests; what the bucket holds and how: eo/cloud/artifact_store.py.
The Airflow operator takes this path when the environment's `job_runner` is `emr-serverless`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

from eo.cloud.artifact_store import build, publish, uploaded_application, uploaded_jars
from eo.cloud.artifacts import (
    BUILD_DIR,
    OUTPUTS_KEY,
    application_conf,
    artifact_key,
    outputs_archive,
)
from eo.runtime.config import REPO_ROOT, Settings, load_settings

TERMINAL = {"SUCCESS", "FAILED", "CANCELLED"}
# Every other state is live. CANCELLING too: the run's driver gets a grace period to stop and may
# still commit meanwhile, so nothing may start beside it until it is CANCELLED.
LIVE = ("SUBMITTED", "PENDING", "SCHEDULED", "QUEUED", "RUNNING", "CANCELLING")


class JobRunFailed(RuntimeError):
    """The job run ended in FAILED or CANCELLED."""


def terraform_outputs(settings: Settings) -> dict:
    from eo.runtime.tf_outputs import read_outputs

    return read_outputs(settings.env, REPO_ROOT)


def aws_client(service: str, region: str):
    import boto3

    return boto3.client(service, region_name=region)


def check_release(runtime, outputs: dict) -> None:
    """The application Terraform made runs the release the jars were resolved for."""
    from eo.cloud.outputs import RuntimeMismatch

    deployed = str(outputs["emr_release_label"])
    if deployed != runtime.release_label:
        raise RuntimeMismatch(
            f"the EMR application runs {deployed} but the jars are for {runtime.release_label} "
            "(infra/cloud-versions.json): terraform apply deploys the matrix's release; apply it, or match the matrix"
        )


def upload(settings: Settings, s3=None, log: Callable[[str], None] = print, folder: Path = BUILD_DIR) -> list[str]:
    """Without Terraform: build the artifacts (in `folder`) and put them in the artifacts bucket
    with the environment's outputs: the objects `terraform apply` uploads. Returns the keys, the
    manifests last."""
    from eo.cloud.outputs import emr_runtime

    outputs = terraform_outputs(settings)
    check_release(emr_runtime(), outputs)
    s3 = s3 or aws_client("s3", str(outputs["region"]))
    bucket = str(outputs["artifacts_bucket"])
    build(folder)
    outputs_archive(outputs, folder.parent / OUTPUTS_KEY)
    s3.upload_file(str(folder.parent / OUTPUTS_KEY), bucket, OUTPUTS_KEY)
    return [OUTPUTS_KEY, *publish(folder, bucket, s3, log)]


def job_driver(
    settings: Settings,
    script: str,
    args: list[str],
    conf: dict[str, str] | None = None,
    outputs: dict | None = None,
    s3=None,
) -> dict:
    """The sparkSubmit job driver: the spark-submit command of eo.runtime.submit, with the s3:// artifacts the last
    upload made for the application's release, the release's own S3 DynamoDB log store jar, and the
    application's code, home and Python (eo/cloud/artifacts.py)."""
    from eo.cloud.outputs import emr_runtime

    runtime = emr_runtime()
    outputs = outputs or terraform_outputs(settings)
    check_release(runtime, outputs)
    bucket = str(outputs["artifacts_bucket"])
    s3 = s3 or aws_client("s3", str(outputs["region"]))
    uploaded = [f"s3://{bucket}/{artifact_key('jars', j)}" for j in uploaded_jars(runtime, bucket, s3)]
    delta = f"s3://{bucket}/{artifact_key('jars', runtime.jar_names()['delta-spark'])}"
    application = uploaded_application(bucket, s3)
    merged = application_conf(settings, bucket, application)
    # The delta-spark jar carries the `delta` Python package the jobs import.
    merged["spark.submit.pyFiles"] += f",{delta}"
    merged = {"spark.jars": ",".join([*uploaded, runtime.log_store_jar]), **merged, **(conf or {})}
    return spark_submit(bucket, application.entry_point(script), args, merged)


def spark_submit(bucket: str, entry_point: str, args: list[str], conf: dict[str, str]) -> dict:
    """A sparkSubmit job driver: the uploaded entry point (its key), its arguments, `--conf` pairs."""
    return {
        "sparkSubmit": {
            "entryPoint": f"s3://{bucket}/{entry_point}",
            "entryPointArguments": list(args),
            "sparkSubmitParameters": " ".join(f"--conf {k}={v}" for k, v in conf.items()),
        }
    }


def run(
    settings: Settings,
    script: str,
    args: list[str],
    conf: dict[str, str] | None = None,
    client=None,
    poll_seconds: float = 15,
    timeout: float = 6 * 3600,
    log: Callable[[str], None] = print,
    wait: bool = True,
    name: str | None = None,
    replace_earlier: bool = False,
    started: Callable[[str], None] | None = None,
) -> str:
    """Start the job run and (unless `wait` is false, as for the stream) wait for it; return its
    id, or raise JobRunFailed.

    With `replace_earlier` (a task's own `name`), a live run of that name (an earlier try of the
    task whose worker died) is cancelled first, so a retry never runs beside it. While waiting,
    whatever ends the wait (a timeout, the task being killed) cancels the run before it goes on:
    no run outlives the task that waits for it. `started` gets the run's id as soon as it has one."""
    outputs = terraform_outputs(settings)
    client = client or aws_client("emr-serverless", str(outputs["region"]))
    application = str(outputs["emr_application_id"])
    name = name or f"eo-{Path(script).stem}"
    if replace_earlier:
        cancel_live(client, application, name, log)
    run_id = client.start_job_run(
        applicationId=application,
        executionRoleArn=str(outputs["spark_role_arn"]),
        name=name,
        jobDriver=job_driver(settings, script, args, conf, outputs),
    )["jobRunId"]
    log(f"EMR Serverless job run {run_id} ({name}) on application {application}: {script} {' '.join(args)}")
    if started:
        started(run_id)
    if not wait:
        return run_id
    try:
        job = _wait(client, application, run_id, poll_seconds, timeout, log)
    except BaseException as stopped:  # a timeout, a kill (Airflow raises in the task), Ctrl-C
        client.cancel_job_run(applicationId=application, jobRunId=run_id)
        log(f"job run {run_id}: cancelled, its wait ended ({type(stopped).__name__}: {stopped})")
        if isinstance(stopped, TimeoutError):
            raise JobRunFailed(f"{stopped}; cancelled it") from stopped
        raise
    if job["state"] != "SUCCESS":
        raise JobRunFailed(f"job run {run_id} ended {job['state']}: {job.get('stateDetails', 'no details')}")
    log(f"job run {run_id}: SUCCESS")
    return run_id


def _wait(client, application: str, run_id: str, poll_seconds: float, timeout: float, log) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        job = client.get_job_run(applicationId=application, jobRunId=run_id)["jobRun"]
        if job["state"] in TERMINAL:
            return job
        if time.monotonic() > deadline:
            raise TimeoutError(f"job run {run_id} still {job['state']} after {timeout:.0f} s")
        log(f"job run {run_id}: {job['state']}")
        time.sleep(poll_seconds)


def live_runs(client, application: str, name: str) -> list[dict]:
    """The job runs called `name` that have not ended (each as ListJobRuns gives it)."""
    pages = client.get_paginator("list_job_runs").paginate(applicationId=application, states=list(LIVE))
    return [run for page in pages for run in page["jobRuns"] if run.get("name") == name]


def cancel_live(client, application: str, name: str, log: Callable[[str], None] = print) -> list[str]:
    """Cancel every live run called `name` (what an earlier try of a task left running); their ids."""
    earlier = [run["id"] for run in live_runs(client, application, name)]
    for run_id in earlier:
        client.cancel_job_run(applicationId=application, jobRunId=run_id)
        log(f"cancelled job run {run_id} ({name}): an earlier try of this task left it running")
    return earlier


def cancel(settings: Settings, run_id: str, client=None) -> None:
    """Cancel one job run (a killed task's)."""
    outputs = terraform_outputs(settings)
    client = client or aws_client("emr-serverless", str(outputs["region"]))
    client.cancel_job_run(applicationId=str(outputs["emr_application_id"]), jobRunId=run_id)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["build"]:
        print(f"built {len(build())} artifacts in {BUILD_DIR}: terraform apply uploads them")
        return 0
    if argv[:1] == ["publish"] and len(argv) == 5:  # what terraform apply runs: no settings, no outputs yet
        options = dict(zip(argv[1::2], argv[2::2], strict=True))
        publish(BUILD_DIR, options["--bucket"], aws_client("s3", options["--region"]), manifests=False)
        return 0
    settings = load_settings()
    if argv[:1] == ["upload"]:
        upload(settings)
        return 0
    detach = "--detach" in argv[:2]
    argv = [a for a in argv[:2] if a != "--detach"] + argv[2:]
    if argv[:1] == ["run"] and len(argv) >= 2:
        try:
            run(settings, argv[1], argv[2:], wait=not detach)
        except JobRunFailed as error:
            print(error, file=sys.stderr)
            return 1
        return 0
    usage = (
        "usage: python -m eo.cloud.emr_serverless build | upload | publish --bucket B --region R"
        " | run [--detach] <script> [args...]"
    )
    print(usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
