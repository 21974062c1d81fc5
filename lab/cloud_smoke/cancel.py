"""cancel_on_kill: a DAG task's EMR Serverless job run is cancelled when the task is killed.

A child process waits for a job run the way a DAG task does (dags/eo_common/platform.py,
EmrServerlessLauncher: eo.cloud.emr_serverless.run with wait, the task instance's name and
replace_earlier), with the job driver read from the smoke's artifacts bucket. It handles SIGTERM as
the MWAA Airflow's task runner does (airflow.sdk task_runner `_on_term`: the task's on_kill, which
cancels the task's run with eo.cloud.emr_serverless.cancel). The smoke sends it SIGTERM while it
waits, as Airflow's supervisor does to a killed task, and reads the run's state.

EMR Serverless is moto's, in this process (ThreadedMotoServer): moto ends a run SUCCESS the moment
it starts, so here a run stays RUNNING until it is cancelled, as a job run still going when its
task is killed. The application is moto's with the deployed release's label in the outputs the
child reads (Terraform's, plus the application's id and the Spark role). Also checked: an earlier
try's live run of the same name is cancelled before the new run starts (replace_earlier), a run
of another name is not.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from eo.runtime.config import REPO_ROOT

NAME = "cloud_smoke.verify_task.manual__1"  # <dag>.<task>.<run>, as EmrServerlessLauncher names runs
ROLE = "arn:aws:iam::123456789012:role/eo-spark"
SCRIPT = "jobs/verify.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check(outputs: dict, s3_endpoint: str, logs: Path, timeout: float = 30) -> dict:
    """Start the child, kill it while it waits; the run's state and what else was checked."""
    import boto3
    import moto.emrserverless.models as emr_models
    from moto.server import ThreadedMotoServer

    from eo.cloud.outputs import emr_runtime

    began = time.monotonic()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # the server's request lines
    moto_status, emr_models.JOB_STATUS = emr_models.JOB_STATUS, "RUNNING"  # live until cancelled
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    child = None
    try:
        endpoint = f"http://127.0.0.1:{port}"
        region = str(outputs["region"])
        emr = boto3.client(
            "emr-serverless", region_name=region, endpoint_url=endpoint,
            aws_access_key_id="local", aws_secret_access_key="local",
        )  # fmt: skip
        app = emr.create_application(name="eo", releaseLabel="emr-7.0.0", type="SPARK")["applicationId"]
        driver = {"sparkSubmit": {"entryPoint": "s3://none/none.py"}}
        other, earlier = (
            emr.start_job_run(applicationId=app, executionRoleArn=ROLE, name=name, jobDriver=driver)["jobRunId"]
            for name in ("another", NAME)
        )
        deployed = {
            **outputs,
            "emr_application_id": app,
            "emr_release_label": emr_runtime().release_label,
            "spark_role_arn": ROLE,
        }
        folder = Path(tempfile.mkdtemp(prefix="eo-cloud-smoke-cancel-"))
        (folder / "outputs.json").write_text(json.dumps(deployed))
        env = {
            **os.environ,
            "EO_TF_OUTPUTS": str(folder / "outputs.json"),
            "AWS_ENDPOINT_URL_EMR_SERVERLESS": endpoint,
            "AWS_ENDPOINT_URL_S3": s3_endpoint,
            "AWS_ACCESS_KEY_ID": "local",
            "AWS_SECRET_ACCESS_KEY": "local",
            "AWS_DEFAULT_REGION": region,
            "PYTHONPATH": str(REPO_ROOT),
        }
        log = logs / "cancel-on-kill.log"
        with log.open("w") as out:
            child = subprocess.Popen(
                [sys.executable, "-m", "lab.cloud_smoke.cancel"], cwd=REPO_ROOT, env=env, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        run_id = None
        while run_id is None and child.poll() is None and time.monotonic() - began < timeout:
            found = [line for line in log.read_text().splitlines() if line.startswith("STARTED ")]
            run_id = found[0].split()[1] if found else None
            time.sleep(0.2)
        result: dict = {"run_started": run_id is not None}
        if run_id is None:
            return {**result, "cancel_on_kill": False, "log": str(log)}
        time.sleep(1.5)  # the child is in its wait (polling each second)
        waiting = emr.get_job_run(applicationId=app, jobRunId=run_id)["jobRun"]["state"]
        os.kill(child.pid, signal.SIGTERM)  # what Airflow's supervisor sends a killed task
        try:
            child.wait(max(1.0, timeout - (time.monotonic() - began)))
        except subprocess.TimeoutExpired:
            pass
        state = emr.get_job_run(applicationId=app, jobRunId=run_id)["jobRun"]["state"]
        states = {r: emr.get_job_run(applicationId=app, jobRunId=r)["jobRun"]["state"] for r in (earlier, other)}
        result.update(
            state_while_waiting=waiting,
            state_after_kill=state,
            task_ended=child.poll() is not None,
            earlier_try_cancelled=states[earlier] == "CANCELLED",
            other_run_left_alone=states[other] == "RUNNING",
            seconds=round(time.monotonic() - began, 1),
            log=str(log),
        )
        result["cancel_on_kill"] = waiting == "RUNNING" and state in ("CANCELLED", "CANCELLING")
        return result
    finally:
        if child is not None and child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
        server.stop()
        emr_models.JOB_STATUS = moto_status


def task() -> int:
    """The child: a DAG task waiting for its job run, killed by SIGTERM (Airflow 3's task runner)."""
    from eo.cloud import emr_serverless
    from eo.runtime.config import load_settings

    settings = load_settings("local-s3")
    running: list[str] = []

    def started(run_id: str) -> None:  # EmrServerlessLauncher's: the operator keeps it for on_kill
        running.append(run_id)
        print(f"STARTED {run_id}", flush=True)

    def on_term(signum, frame) -> None:  # task_runner's _on_term: ti.task.on_kill()
        for run_id in running:  # PlatformSparkSubmitOperator.on_kill
            emr_serverless.cancel(load_settings(), run_id)
            print(f"on_kill: cancelled EMR Serverless job run {run_id}: its task was killed", flush=True)

    signal.signal(signal.SIGTERM, on_term)
    try:
        emr_serverless.run(
            settings, SCRIPT, [], name=NAME, replace_earlier=True, started=started, poll_seconds=1,
            log=lambda line: print(line, flush=True),
        )  # fmt: skip
    except emr_serverless.JobRunFailed as error:  # the wait sees the run CANCELLED: the task fails
        print(error, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(task())
