"""What the application expects of the cloud, and where it reads what Terraform created.

Terraform's outputs are the only source of the cloud names: `terraform output -json` is saved
as conf/terraform-outputs/<env>.json and conf/platform.toml refers to its values as ${tf:name}.
The IAM actions below are what the jobs do; a test keeps Terraform's policies equal to them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

# The outputs conf/platform.toml and the deploy tooling read.
REQUIRED_OUTPUTS = (
    "region",
    "lake_bucket",
    "checkpoint_bucket",
    "artifacts_bucket",
    "dags_bucket",
    "log_store_table",
    "kms_key_arn",
    "spark_role_arn",
    "airflow_role_arn",
    "emr_application_id",
)

# Delta writes and VACUUM deletes, s3a's multipart uploads and their clean-up.
SPARK_S3_OBJECT_ACTIONS = frozenset(
    {"s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"}
)
SPARK_S3_BUCKET_ACTIONS = frozenset({"s3:ListBucket", "s3:GetBucketLocation", "s3:ListBucketMultipartUploads"})
# io.delta.storage.S3DynamoDBLogStore: checks the table, reads and conditionally writes entries.
LOG_STORE_ACTIONS = frozenset(
    {"dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"}
)
# Key schema S3DynamoDBLogStore reads and writes.
LOG_STORE_KEYS = {"hash": "tablePath", "range": "fileName", "ttl": "expireTime"}


class MissingOutputs(FileNotFoundError):
    """The environment needs Terraform outputs that are not there."""


def outputs_path(env: str, root: Path) -> Path:
    return Path(os.environ.get("EO_TF_OUTPUTS", root / "conf" / "terraform-outputs" / f"{env}.json"))


def read_outputs(env: str, root: Path) -> dict[str, object]:
    """Values of `terraform output -json` ({"name": {"value": ...}}) or of a flat {name: value}."""
    path = outputs_path(env, root)
    if not path.exists():
        hint = (
            "run `python -m infra.s3 start` (it bootstraps the buckets and writes them)"
            if env == "local-s3"
            else f"run `terraform -chdir=terraform/environments/<env> output -json > {path}`"
        )
        raise MissingOutputs(f"environment {env!r} needs Terraform outputs in {path}: {hint}")
    raw = json.loads(path.read_text())
    return {k: v["value"] if isinstance(v, dict) and "value" in v else v for k, v in raw.items()}
