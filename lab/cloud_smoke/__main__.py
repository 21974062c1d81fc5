"""`make cloud-smoke`: the shipped artifacts run as EMR Serverless would run them, against the local
S3 server and its DynamoDB (moto) and a local Kafka, in the local-s3 environment.

1. the artifacts are built as for `terraform apply` (eo/cloud/artifacts.py) and put in the
   artifacts bucket; the job's Python is a venv of the job image's requirements (job_venv.py);
2. the stream until caught up, a rebuild and a verify run from them, each in an empty folder
   outside the repository with only what the job driver passes (runtime.py): all three must pass,
   for each declared source (the clickstream, then orders: EO_SOURCE in the job driver);
3. guard: while a shipped stream holds the lease, a shipped `rebuild --target main` and a shipped
   reset (each in a folder of its own: another machine) must refuse, and take no epoch; once the
   stream has stopped, the rebuild into main must pass;
4. commit race: the stream's commits against OPTIMIZE on one table (commit_race.py);
5. cancel_on_kill: a DAG task's EMR Serverless job run, its task killed while it waits, must end
   cancelled (cancel.py, on moto's EMR Serverless);
6. iam: what the job runs and that task need, against the deployed policies (iam.py);
7. versions: the Spark, Delta, Python and deltalake the jobs ran and the MWAA venv's Airflow must
   be infra/cloud-versions.json's (versions.py): the engine is the EMR release's (runtime.py).

Writes reports/cloud-smoke/latest.json (and the jobs' logs beside it). It wipes the local-s3
environment's lake and checkpoints and its topic first. Exits non-zero unless everything passed;
on versions other than the matrix's, with one line naming each difference.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from eo.cloud import artifact_store
from eo.cloud.artifact_store import emr_jar_paths, uploaded_application
from eo.cloud.artifacts import (
    HOME_ALIAS,
    OUTPUTS_KEY,
    application_conf,
    artifact_key,
    outputs_archive,
)
from eo.cloud.emr_serverless import spark_submit
from eo.core.sources import CLICKS, DECLARED
from eo.runtime.cli import NOT_READY, guarded
from eo.runtime.config import REPO_ROOT, STREAM_QUERY, Settings, load_settings, source_prefix
from eo.runtime.environment import environment
from eo.runtime.kafka_admin import delete_topic, ensure_topic
from eo.runtime.tf_outputs import read_outputs
from infra.kafka import Broker
from infra.s3 import LocalS3
from lab.cloud_smoke import cancel, iam, versions
from lab.cloud_smoke.commit_race import passed as race_passed
from lab.cloud_smoke.commit_race import race
from lab.cloud_smoke.job_venv import job_venv
from lab.cloud_smoke.runtime import SHIPPED_JARS, LocalRuntime, runtime_env
from producer.publish import publish
from producer.sources import generator_for

REPORTS = REPO_ROOT / "reports" / "cloud-smoke"
ENV = "local-s3"
REFUSAL = "holds the stream's live tables: stop it"


def step(text: str) -> float:
    print(f"\n== {text}", flush=True)
    return time.monotonic()


class Smoke:
    def __init__(self, settings: Settings, s3, runtime: LocalRuntime, logs: Path, folders: Path):
        self.settings, self.s3, self.runtime, self.logs, self.folders = settings, s3, runtime, logs, folders
        self.bucket = str(read_outputs(ENV, REPO_ROOT)["artifacts_bucket"])
        self.shipped_jars: list[str] = []

    def ship(self) -> int:
        """The artifacts as Terraform uploads them (make artifacts' artifact_store.build: the release's
        jars and their manifest, the application's own; artifact_store.publish: content-addressed
        keys, the manifests last). Job runs take the application's own jars from there, the
        release's from the runtime (runtime.py)."""
        build = self.folders / "build"
        artifact_store.build(build)
        outputs = self.folders / "outputs" / OUTPUTS_KEY
        outputs_archive(read_outputs(ENV, REPO_ROOT), outputs)
        self.s3.upload_file(str(outputs), self.bucket, OUTPUTS_KEY)
        keys = artifact_store.publish(build, self.bucket, self.s3, log=lambda line: print(f"   {line}", flush=True))
        jars = [Path(j) for j in emr_jar_paths() if Path(j).name.startswith(SHIPPED_JARS)]
        self.shipped_jars = [f"s3://{self.bucket}/{artifact_key('jars', j)}" for j in jars]
        return 1 + len(keys)

    def driver(self, script: str, args: list[str], source: str = CLICKS.name) -> dict:
        """The job driver eo/cloud/emr_serverless.py makes, from the uploaded manifest's keys, but for
        the runtime's own release jars; its job serves `source`."""
        application = uploaded_application(self.bucket, self.s3)
        conf = application_conf(self.settings, self.bucket, application, source=source)
        delta = next(j for j in self.runtime.release_jars() if Path(j).name.startswith("delta-spark"))
        conf["spark.submit.pyFiles"] += f",{delta}"
        submit = spark_submit(
            self.bucket, application.entry_point(script), args, {"spark.jars": ",".join(self.shipped_jars), **conf}
        )
        return submit["sparkSubmit"]

    def job(self, name: str, script: str, args: list[str], source: str = CLICKS.name) -> int:
        began = time.monotonic()
        code = self.runtime.run(self.driver(script, args, source), self.folders / name, self.logs / f"{name}.log")
        print(f"   {script} {' '.join(args)}: exit {code} in {time.monotonic() - began:.0f} s ({self.logs / name}.log)")
        return code

    def start(self, name: str, script: str, args: list[str]) -> subprocess.Popen:
        return self.runtime.start(self.driver(script, args), self.folders / name, self.logs / f"{name}.log")

    def refused(self, name: str, script: str, args: list[str]) -> bool:
        code = self.job(name, script, args)
        return code == NOT_READY and REFUSAL in (self.logs / f"{name}.log").read_text()


def verdict(folder: Path, source: str = CLICKS.name) -> dict:
    """What the shipped verify concluded, from its job folder (local-s3 keeps reports on disk)."""
    path = folder / HOME_ALIAS / f"reports{source_prefix(source)}" / "verify" / "latest.json"
    if not path.exists():
        return {"missing": str(path)}
    found = json.loads(path.read_text())
    reconciliation = found.get("reconciliation", {})
    return {"passed": found.get("passed"), **{k: reconciliation.get(k) for k in ("no_loss", "acked", "lost")}}


def bronze_rows(settings: Settings, source: str = CLICKS.name) -> int:
    """Rows of a source's bronze (delta-rs, at the path its jobs write: under the source's prefix)."""
    lake = settings.with_overrides(lake_root=f"{settings.lake_root.rstrip('/')}{source_prefix(source)}")
    return environment(lake).table("bronze").refresh().to_pyarrow_dataset().count_rows()


def source_jobs(smoke: Smoke, settings: Settings, source: str, events: int, run: str) -> dict:
    """A source's records produced to its topic, then its shipped stream, rebuild and verify: each
    passed (the stream when bronze holds every acknowledged record; verify with no loss)."""
    topic = settings.with_overrides(topic=DECLARED[source].topic)
    delete_topic(topic)
    ensure_topic(topic)
    generator = generator_for(source).make(seed=11, total_events=events)
    stats = publish(generator.messages(), topic, environment(settings).ack_log(f"cloud-smoke-{source}-{run}.csv"))
    named = "" if source == CLICKS.name else f"{source}-"
    stream_ok = smoke.job(f"{named}stream", "jobs/stream.py", ["run", "--until-caught-up"], source) == 0
    landed = bronze_rows(settings, source) if stream_ok else 0
    passed = {"stream": stream_ok and landed == stats.acked}
    passed["rebuild"] = smoke.job(f"{named}rebuild", "jobs/rebuild.py", [], source) == 0
    verified = smoke.job(f"{named}verify", "jobs/verify.py", [], source) == 0
    found = verdict(smoke.folders / f"{named}verify", source)
    # Passed only with the no-loss check done: the acks the producer left on object storage.
    passed["verify"] = verified and found.get("no_loss") == "passed"
    return {"bronze_rows": landed, "acked": stats.acked, "verify": found, "passed": passed}


def wait_for_hold(settings: Settings, stream: subprocess.Popen, timeout: float = 240) -> bool:
    lease = environment(settings).lease()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and stream.poll() is None:
        if lease.held(STREAM_QUERY):
            return True
        time.sleep(2)
    return False


def guard(smoke: Smoke, settings: Settings) -> dict:
    stream = smoke.start("guard-stream", "jobs/stream.py", ["run"])
    try:
        if not wait_for_hold(settings, stream):
            return {"stream_held_lease": False, "rebuild_main_refused": False, "reset_refused": False}
        epoch = environment(settings).lease().current(STREAM_QUERY)
        result = {
            "stream_held_lease": True,
            "rebuild_main_refused": smoke.refused("guard-rebuild", "jobs/rebuild.py", ["--target", "main"]),
            "reset_refused": smoke.refused("guard-reset", "jobs/reset.py", []),
        }
        result["epoch_unchanged"] = environment(settings).lease().current(STREAM_QUERY) == epoch
        result["stream_still_running"] = stream.poll() is None
        return result
    finally:
        if stream.poll() is None:
            os.killpg(stream.pid, signal.SIGTERM)  # as a cancelled job run: the stream lets go first
            try:
                stream.wait(120)
            except subprocess.TimeoutExpired:
                os.killpg(stream.pid, signal.SIGKILL)
                stream.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.cloud_smoke", description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    args = parser.parse_args(argv)
    os.environ["EO_ENV"] = ENV
    run = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    logs = REPORTS / run
    logs.mkdir(parents=True)
    report: dict = {"run": run, "events": args.events, "seconds": {}}
    server, broker = LocalS3.default(), None
    t = step(f"local S3 and DynamoDB (moto) at {server.endpoint}, Kafka")
    started_s3 = server.start()
    settings = load_settings(ENV)
    broker = Broker.default()
    started_kafka = broker.start()
    try:
        for root in (settings.lake_root, settings.checkpoint_root):
            environment(settings).lake_files.delete_tree(root)
        t = step("the job image's Python environment")
        runtime = LocalRuntime(job_venv(), server.client("s3"), {**runtime_env(), **aws_stand_in(settings)})
        report["seconds"]["job_venv"] = round(time.monotonic() - t)
        folders = Path(tempfile.mkdtemp(prefix="eo-cloud-smoke-"))  # outside the repository
        smoke = Smoke(settings, server.client("s3"), runtime, logs, folders)
        t = step(f"ship: {smoke.ship()} artifacts to s3://{smoke.bucket}/")
        artifact: dict[str, bool] = {}
        for source in DECLARED:
            events = args.events if source == CLICKS.name else max(1, args.events // 5)
            t = step(f"{source}: produce {events:,} records, then its shipped jobs, each in an empty folder")
            found = source_jobs(smoke, settings, source, events, run)
            report.setdefault("sources", {})[source] = {k: v for k, v in found.items() if k != "passed"}
            named = "" if source == CLICKS.name else f"{source}_"
            artifact.update({f"{named}{k}": ok for k, ok in found["passed"].items()})
            report["seconds"][f"{named}jobs"] = round(time.monotonic() - t)
        clicks = report["sources"][CLICKS.name]
        report["bronze_rows"], report["acked"], report["verify"] = (
            clicks["bronze_rows"],
            clicks["acked"],
            clicks["verify"],
        )
        report["artifact"] = {k: "passed" if ok else "failed" for k, ok in artifact.items()}
        t = step("guard: a shipped stream holds the lease; a rebuild --target main and a reset elsewhere")
        report["guard"] = guard(smoke, settings)
        report["seconds"]["guard"] = round(time.monotonic() - t)
        t = step("the stream stopped: a shipped rebuild --target main (delta-rs commits on the live tables)")
        rebuilt = smoke.job("rebuild-main", "jobs/rebuild.py", ["--target", "main"]) == 0
        report["artifact"]["rebuild_main"] = "passed" if rebuilt else "failed"
        report["seconds"]["rebuild_main"] = round(time.monotonic() - t)
        t = step("commit race: the stream's appends against OPTIMIZE on one table")
        raced = settings.with_overrides(lake_root=f"{settings.lake_root}/_commit_race_{uuid.uuid4().hex[:8]}")
        report["commit_race"] = race(raced)
        report["seconds"]["commit_race"] = round(time.monotonic() - t)
        t = step("cancel_on_kill: a DAG task's EMR Serverless job run, the task killed while it waits (moto)")
        report["cancel"] = cancel.check(read_outputs(ENV, REPO_ROOT), server.endpoint, logs)
        report["cancel_on_kill"] = report["cancel"].pop("cancel_on_kill")
        report["iam"] = iam.check()
        driver_logs = [logs / f"{name}.log" for name in ("stream", "rebuild", "verify")]
        report["versions"], report["versions_from"] = versions.ran(runtime.venv, runtime.release_jars(), driver_logs)
    finally:
        if started_kafka:
            broker.stop()
        if started_s3:
            server.stop()
    report["versions_differ"] = differ = versions.differences(report.get("versions", {}))
    ok = passed(report) and not differ
    report["passed"] = ok
    for path in (logs / "cloud-smoke.json", REPORTS / "latest.json"):
        path.write_text(json.dumps(report, indent=2))
    shown = ("versions", "artifact", "guard", "commit_race", "cancel_on_kill", "iam")
    print(json.dumps({k: report.get(k) for k in shown}, indent=2))
    if differ:
        print(f"cloud smoke ran other versions than infra/cloud-versions.json: {'; '.join(differ)}")
    print(f"\ncloud smoke {'PASSED' if ok else 'FAILED'}: {REPORTS / 'latest.json'}")
    return 0 if ok else 1


def aws_stand_in(settings: Settings) -> dict[str, str]:
    """The job role's credentials and region: what the runtime gives every job run on AWS."""
    return {"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "AWS_REGION": settings.aws_region}


def passed(report: dict) -> bool:
    checks = report.get("guard", {})
    return (
        set(report.get("artifact", {}).values()) == {"passed"}
        and all(checks.get(k) for k in ("rebuild_main_refused", "reset_refused", "epoch_unchanged"))
        and "commit_race" in report
        and race_passed(report["commit_race"])
        and report.get("cancel_on_kill") is True
        and report.get("iam", {}).get("denied") == []
    )


if __name__ == "__main__":
    sys.exit(guarded(main))
