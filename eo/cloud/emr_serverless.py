"""The cloud way to run a job module: the same spark-submit, as an EMR Serverless job run.

    python -m eo.cloud.emr_serverless upload                      # jars, job code and entry points
    python -m eo.cloud.emr_serverless run batch/rebuild.py --start 2026-11-20 --end 2026-11-21
    python -m eo.cloud.emr_serverless run --detach streaming/run.py run   # the stream: start, do not wait

Everything it addresses comes from Terraform's outputs (conf/terraform-outputs/<env>.json): the
artifacts bucket, the application id and its release, the Spark runtime role. The jars are the ones
`make jars-emr` resolves for that release (infra/maven/emr/pom.xml), never the local Spark's: the
upload and every job driver refuse jars or an application release that disagree with the pom. The
upload records the jars it made in a manifest next to them, which job drivers read (on MWAA too).
The Airflow operator takes this path when the environment's `job_runner` is `emr-serverless`.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from eo.runtime.config import REPO_ROOT, Settings, load_settings

ENTRY_POINTS = ("streaming/run.py", "batch/rebuild.py", "batch/verify.py", "batch/maintenance.py")
TERMINAL = {"SUCCESS", "FAILED", "CANCELLED"}
# Every other state is live. CANCELLING too: the run's driver gets a grace period to stop and may
# still commit meanwhile, so nothing may start beside it until it is CANCELLED.
LIVE = ("SUBMITTED", "PENDING", "SCHEDULED", "QUEUED", "RUNNING", "CANCELLING")
EMR_JARS_DIR = REPO_ROOT / ".cache" / "jars" / "emr"
# Which jars the last upload put in the artifacts bucket, for which release: what job drivers name,
# wherever they are built (on MWAA there is no .cache/jars).
JAR_MANIFEST = "jars/manifest.json"


class JobRunFailed(RuntimeError):
    """The job run ended in FAILED or CANCELLED."""


def terraform_outputs(settings: Settings) -> dict:
    from eo.runtime.tf_outputs import read_outputs

    return read_outputs(settings.env, REPO_ROOT)


def aws_client(service: str, region: str):
    import boto3

    return boto3.client(service, region_name=region)


def artifact_key(kind: str, path: Path | str) -> str:
    return f"{kind}/{Path(path).name}" if kind in ("jars", "pyfiles") else f"entrypoints/{path}"


def check_jar_names(runtime, names: set[str], where: str) -> None:
    """Exactly one jar of each artifact the release needs, in its version: none missing, none left over."""
    from eo.cloud.outputs import RuntimeMismatch

    for artifact, name in runtime.jar_names().items():
        present = sorted(f for f in names if f.startswith(artifact))
        if present != [name]:
            raise RuntimeMismatch(
                f"{where} has {present or 'no ' + artifact} where {runtime.release_label} needs {name}: "
                "run `make jars-emr` and upload again"
            )


def emr_jar_paths(runtime=None, jars_dir: Path | None = None) -> list[str]:
    """The jars `make jars-emr` resolved, refused when they are not the ones infra/maven/emr/pom.xml names."""
    from eo.cloud.outputs import emr_runtime
    from eo.runtime.jars import MissingJarsError

    runtime = runtime or emr_runtime()
    jars_dir = jars_dir or EMR_JARS_DIR
    jars = sorted(jars_dir.glob("*.jar"))
    if not jars:
        raise MissingJarsError(f"no jars in {jars_dir}; run `make jars-emr`")
    check_jar_names(runtime, {p.name for p in jars}, str(jars_dir))
    return [str(p) for p in jars]


def uploaded_jars(runtime, bucket: str, s3) -> list[str]:
    """File names of the jars the last upload put under s3://<bucket>/jars/, refused when not the release's."""
    from botocore.exceptions import ClientError

    from eo.cloud.outputs import RuntimeMismatch
    from eo.runtime.jars import MissingJarsError

    try:
        manifest = json.loads(s3.get_object(Bucket=bucket, Key=JAR_MANIFEST)["Body"].read())
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") not in ("NoSuchKey", "404"):
            raise
        raise MissingJarsError(
            f"no jars uploaded to s3://{bucket}/; run `python -m eo.cloud.emr_serverless upload`"
        ) from None
    if manifest["release_label"] != runtime.release_label:
        raise RuntimeMismatch(
            f"s3://{bucket}/ holds jars for {manifest['release_label']}, not {runtime.release_label}: upload again"
        )
    check_jar_names(runtime, set(manifest["jars"]), f"s3://{bucket}/jars/")
    return list(manifest["jars"])


def check_release(runtime, outputs: dict) -> None:
    """The application Terraform made runs the release the jars were resolved for."""
    from eo.cloud.outputs import RuntimeMismatch

    deployed = str(outputs["emr_release_label"])
    if deployed != runtime.release_label:
        raise RuntimeMismatch(
            f"the EMR application runs {deployed} but the jars are for {runtime.release_label} "
            "(infra/maven/emr/pom.xml): set the emr_release_label default in terraform/platform/variables.tf to match"
        )


def upload(settings: Settings, s3=None, log: Callable[[str], None] = print) -> list[str]:
    """Put the jars resolved for the application's release, the zipped job packages and the entry points
    in the artifacts bucket."""
    from eo.cloud.outputs import emr_runtime
    from eo.runtime.submit import build_pyfiles

    outputs = terraform_outputs(settings)
    runtime = emr_runtime()
    check_release(runtime, outputs)
    s3 = s3 or aws_client("s3", str(outputs["region"]))
    bucket = str(outputs["artifacts_bucket"])
    files = [("jars", Path(j)) for j in emr_jar_paths(runtime)]
    files += [("pyfiles", build_pyfiles())] + [("entrypoints", REPO_ROOT / e) for e in ENTRY_POINTS]
    keys = []
    for n, (kind, path) in enumerate(files, 1):
        key = artifact_key(kind, path if kind != "entrypoints" else path.relative_to(REPO_ROOT))
        s3.upload_file(str(path), bucket, key)
        keys.append(key)
        if n % 10 == 0 or n == len(files):
            log(f"uploaded {n}/{len(files)} artifacts to s3://{bucket}/")
    # Last, so a job driver never names jars that are not all there yet.
    manifest = {"release_label": runtime.release_label, "jars": [p.name for kind, p in files if kind == "jars"]}
    s3.put_object(Bucket=bucket, Key=JAR_MANIFEST, Body=json.dumps(manifest).encode())
    return [*keys, JAR_MANIFEST]


def job_driver(
    settings: Settings,
    script: str,
    args: list[str],
    conf: dict[str, str] | None = None,
    outputs: dict | None = None,
    s3=None,
) -> dict:
    """The sparkSubmit job driver: the spark-submit command of eo.runtime.submit, with the s3:// artifacts the last
    upload made for the application's release, and the release's own S3 DynamoDB log store jar."""
    from eo.cloud.outputs import emr_runtime

    runtime = emr_runtime()
    outputs = outputs or terraform_outputs(settings)
    check_release(runtime, outputs)
    bucket = str(outputs["artifacts_bucket"])
    s3 = s3 or aws_client("s3", str(outputs["region"]))
    uploaded = [f"s3://{bucket}/{artifact_key('jars', j)}" for j in uploaded_jars(runtime, bucket, s3)]
    delta = f"s3://{bucket}/{artifact_key('jars', runtime.jar_names()['delta-spark'])}"
    merged = {
        "spark.jars": ",".join([*uploaded, runtime.log_store_jar]),
        # The delta-spark jar carries the `delta` Python package the jobs import.
        "spark.submit.pyFiles": f"s3://{bucket}/{artifact_key('pyfiles', 'eo-jobs.zip')},{delta}",
        # The job reads the same environment switch on the driver and the executors.
        "spark.emr-serverless.driverEnv.EO_ENV": settings.env,
        "spark.executorEnv.EO_ENV": settings.env,
        **(conf or {}),
    }
    return {
        "sparkSubmit": {
            "entryPoint": f"s3://{bucket}/{artifact_key('entrypoints', script)}",
            "entryPointArguments": list(args),
            "sparkSubmitParameters": " ".join(f"--conf {k}={v}" for k, v in merged.items()),
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
) -> str:
    """Start the job run and (unless `wait` is false, as for the stream) wait for it; return its
    id, or raise JobRunFailed."""
    outputs = terraform_outputs(settings)
    client = client or aws_client("emr-serverless", str(outputs["region"]))
    application = str(outputs["emr_application_id"])
    started = client.start_job_run(
        applicationId=application,
        executionRoleArn=str(outputs["spark_role_arn"]),
        name=name or f"eo-{Path(script).stem}",
        jobDriver=job_driver(settings, script, args, conf, outputs),
    )
    run_id = started["jobRunId"]
    log(f"EMR Serverless job run {run_id} on application {application}: {script} {' '.join(args)}")
    if not wait:
        return run_id
    deadline = time.monotonic() + timeout
    while True:
        job = client.get_job_run(applicationId=application, jobRunId=run_id)["jobRun"]
        if job["state"] in TERMINAL:
            break
        if time.monotonic() > deadline:
            client.cancel_job_run(applicationId=application, jobRunId=run_id)
            raise JobRunFailed(f"job run {run_id} still {job['state']} after {timeout:.0f} s; cancelled it")
        log(f"job run {run_id}: {job['state']}")
        time.sleep(poll_seconds)
    if job["state"] != "SUCCESS":
        raise JobRunFailed(f"job run {run_id} ended {job['state']}: {job.get('stateDetails', 'no details')}")
    log(f"job run {run_id}: SUCCESS")
    return run_id


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
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
    print("usage: python -m eo.cloud.emr_serverless upload | run [--detach] <script> [args...]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
