"""A local S3 (and DynamoDB) for the `local-s3` environment: moto's standalone server on loopback,
bootstrapped with the dev environment's buckets and log store table.

    python -m infra.s3 start|stop|status [--port 5055]
    python -m infra.s3 status [--json] [--check]

Bucket and table names come from terraform/environments/dev/terraform.tfvars, and the bootstrap
writes conf/terraform-outputs/local-s3.json with the same output names Terraform gives, so the
application reads its cloud names one way everywhere.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from eo.cloud.outputs import LOG_STORE_KEYS
from eo.runtime.config import REPO_ROOT
from eo.runtime.tf_outputs import outputs_path
from infra import process, service
from infra.status import Status, server_status

SERVICES_DIR = REPO_ROOT / "data" / "services"
DEV_TFVARS = REPO_ROOT / "terraform" / "environments" / "dev" / "terraform.tfvars"
LOCAL_KAFKA = "127.0.0.1:9092"  # the local broker (python -m infra.kafka) stands in for MSK
BUCKET_OUTPUTS = {  # Terraform output -> tfvars variable
    "lake_bucket": "lake_bucket_name",
    "checkpoint_bucket": "checkpoint_bucket_name",
    "artifacts_bucket": "artifacts_bucket_name",
    "dags_bucket": "dags_bucket_name",
}


def tfvars(path: Path = DEV_TFVARS) -> dict:
    import hcl2

    def plain(value):
        if isinstance(value, str):
            return value.strip('"')
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value

    return {k: plain(v) for k, v in hcl2.load(open(path)).items() if not k.startswith("__")}


def local_outputs(variables: dict) -> dict:
    """What `terraform output` would say for the dev environment, on the local server."""
    outputs = {out: variables[var] for out, var in BUCKET_OUTPUTS.items()}
    outputs.update(
        region=variables["region"],
        log_store_table=variables["log_store_table_name"],
        kms_key_arn="",
        spark_role_arn="",
        airflow_role_arn="",
        emr_application_id="",
        emr_release_label="",
        kafka_bootstrap=LOCAL_KAFKA,
    )
    return {k: {"value": v} for k, v in outputs.items()}


@dataclass(frozen=True)
class LocalS3:
    port: int
    home: Path

    @classmethod
    def default(cls, port: int | None = None) -> LocalS3:
        port = port or int(os.environ.get("EO_S3_PORT", "5055"))
        return cls(port, SERVICES_DIR / f"s3-{port}")

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid_file(self) -> Path:
        return self.home / "moto.pid"

    def answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=2):
                return True
        except OSError:
            return False

    def client(self, service: str):
        import boto3

        return boto3.client(
            service, endpoint_url=self.endpoint, region_name=tfvars()["region"],
            aws_access_key_id="local", aws_secret_access_key="local",  # moto accepts anything
        )  # fmt: skip

    def bootstrap(self) -> dict:
        variables = tfvars()
        s3 = self.client("s3")
        existing = {b["Name"] for b in s3.list_buckets().get("Buckets", [])}
        for var in (*BUCKET_OUTPUTS.values(), "access_log_bucket_name"):
            if variables[var] not in existing:
                s3.create_bucket(
                    Bucket=variables[var], CreateBucketConfiguration={"LocationConstraint": variables["region"]}
                )
                s3.put_bucket_versioning(Bucket=variables[var], VersioningConfiguration={"Status": "Enabled"})
        dynamodb = self.client("dynamodb")
        if variables["log_store_table_name"] not in dynamodb.list_tables()["TableNames"]:
            dynamodb.create_table(
                TableName=variables["log_store_table_name"],
                BillingMode="PAY_PER_REQUEST",
                AttributeDefinitions=[
                    {"AttributeName": LOG_STORE_KEYS["hash"], "AttributeType": "S"},
                    {"AttributeName": LOG_STORE_KEYS["range"], "AttributeType": "S"},
                ],
                KeySchema=[
                    {"AttributeName": LOG_STORE_KEYS["hash"], "KeyType": "HASH"},
                    {"AttributeName": LOG_STORE_KEYS["range"], "KeyType": "RANGE"},
                ],
            )
        outputs = local_outputs(variables)
        path = outputs_path("local-s3", REPO_ROOT)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(outputs, indent=2))
        return outputs

    def start(self) -> bool:
        started = False
        if not (process.alive(process.read_pid(self.pid_file)) and self.answers()):
            if process.port_open(self.port):
                raise RuntimeError(f"port {self.port} is taken by another process")
            self.home.mkdir(parents=True, exist_ok=True)
            command = [sys.executable, str(Path(__file__).with_name("moto_server.py")), str(self.port)]
            process.spawn(command, self.home / "moto.log", self.pid_file)
            process.wait_for(self.answers, 30, f"moto on {self.endpoint}")
            started = True
        self.bootstrap()
        return started

    def stop(self) -> bool:
        return process.stop(self.pid_file)


def _start(server: LocalS3, args: argparse.Namespace) -> None:
    started = server.start()
    print(f"local S3 {'started' if started else 'already running'} on {server.endpoint}; buckets ready")
    print(f"outputs: {outputs_path('local-s3', REPO_ROOT)}")


def _status(server: LocalS3, args: argparse.Namespace) -> Status:
    running = process.alive(process.read_pid(server.pid_file))
    where = {"endpoint": server.endpoint, "home": server.home}
    return server_status("s3", "local S3", running, server.answers, where, "python -m infra.s3 start")


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, help="default: 5055, or EO_S3_PORT")


def main(argv: list[str] | None = None) -> int:
    return service.main(
        "infra.s3", __doc__, lambda args: LocalS3.default(args.port),
        start=_start, stop=service.stop_verb("local S3"), status=_status, options=_options, argv=argv,
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
