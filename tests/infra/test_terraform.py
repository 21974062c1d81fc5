"""Terraform against what the application expects: module shape, typed and described variables,
the outputs the app reads, IAM actions equal to what the jobs do, the log store's key schema,
and the names the local-s3 bootstrap creates. Plus `terraform fmt` and checkov."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import hcl2
import pytest

from infra.s3 import BUCKET_OUTPUTS, local_outputs, tfvars
from jobs.cloud import (
    LOG_STORE_ACTIONS,
    LOG_STORE_KEYS,
    REQUIRED_OUTPUTS,
    SPARK_S3_BUCKET_ACTIONS,
    SPARK_S3_OBJECT_ACTIONS,
)
from jobs.config import REPO_ROOT, load_settings

pytestmark = pytest.mark.unit

TF = REPO_ROOT / "terraform"
MODULES = sorted(p for p in (TF / "modules").iterdir() if p.is_dir())
ROOTS = [TF / "platform", TF / "environments" / "dev", TF / "environments" / "prod"]


def parse(path: Path) -> dict:
    with open(path) as fh:
        return hcl2.load(fh)


def unquote(value):
    return value.strip('"') if isinstance(value, str) else [unquote(v) for v in value]


def blocks(folder: Path, kind: str) -> dict:
    found = {}
    for tf in folder.glob("*.tf"):
        for block in parse(tf).get(kind, []):
            found.update({unquote(k): v for k, v in block.items()})
    return found


def test_every_module_has_the_four_files_and_a_readme():
    assert {m.name for m in MODULES} == {"storage", "delta_log_store", "iam", "compute", "orchestration"}
    for module in MODULES:
        names = {p.name for p in module.iterdir()}
        assert {"main.tf", "variables.tf", "outputs.tf", "versions.tf", "README.md"} <= names, module.name


@pytest.mark.parametrize("folder", MODULES + ROOTS, ids=lambda p: str(p.relative_to(TF)))
def test_every_variable_is_typed_and_described(folder):
    variables = blocks(folder, "variable")
    assert variables, folder
    for name, body in variables.items():
        assert "type" in body, f"{folder.name}.{name} has no type"
        assert unquote(body.get("description", "")).strip(), f"{folder.name}.{name} has no description"


def test_environments_output_everything_the_application_reads():
    for env in ("dev", "prod"):
        outputs = set(blocks(TF / "environments" / env, "output"))
        assert set(REQUIRED_OUTPUTS) <= outputs, set(REQUIRED_OUTPUTS) - outputs
    assert set(blocks(TF / "environments" / "dev", "output")) == set(blocks(TF / "environments" / "prod", "output"))


def test_environments_keep_state_in_s3_with_locking():
    for env in ("dev", "prod"):
        backend = parse(TF / "environments" / env / "main.tf")["terraform"][0]["backend"][0]['"s3"']
        assert backend["use_lockfile"] is True and backend["encrypt"] is True


def iam_locals() -> dict:
    values = parse(TF / "modules" / "iam" / "main.tf")["locals"][0].items()
    return {k: set(unquote(v)) for k, v in values if isinstance(v, list) and k != "__comments__"}


def test_spark_role_may_do_exactly_what_the_jobs_do():
    actions = iam_locals()
    assert actions["s3_object_rw"] == SPARK_S3_OBJECT_ACTIONS
    assert actions["s3_bucket_rw"] == SPARK_S3_BUCKET_ACTIONS
    assert actions["log_store"] == LOG_STORE_ACTIONS
    policy = (TF / "modules" / "iam" / "main.tf").read_text()
    spark_policy = policy[policy.index('resource "aws_iam_role_policy" "spark"') : policy.index("# --- Airflow")]
    assert '"*"' not in spark_policy.replace('"${var.lake_bucket_arn}/*"', ""), "no wildcard resources for Spark"
    assert "Action   = local.s3_object_rw" in spark_policy and "Action   = local.log_store" in spark_policy


def test_log_store_table_has_the_schema_delta_expects():
    table = parse(TF / "modules" / "delta_log_store" / "main.tf")["resource"][0]['"aws_dynamodb_table"']['"log_store"']
    assert unquote(table["hash_key"]) == LOG_STORE_KEYS["hash"]
    assert unquote(table["range_key"]) == LOG_STORE_KEYS["range"]
    assert unquote(table["ttl"][0]["attribute_name"]) == LOG_STORE_KEYS["ttl"]


def test_lifecycle_prefixes_point_at_the_quarantine_table_and_the_reports(monkeypatch, tmp_path):
    storage = blocks(TF / "modules" / "storage", "variable")
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps(local_outputs(tfvars())))
    monkeypatch.setenv("EO_TF_OUTPUTS", str(outputs))
    settings = load_settings("aws")
    lake = f"s3a://{tfvars()['lake_bucket_name']}/"
    assert settings.table_path("quarantine").removeprefix(lake) + "/" == unquote(
        storage["quarantine_prefix"]["default"]
    )
    assert settings.reports_root.removeprefix(lake) + "/" == unquote(storage["reports_prefix"]["default"])


def test_local_s3_bootstraps_the_dev_environments_names():
    variables, outputs = tfvars(), local_outputs(tfvars())
    for output, variable in BUCKET_OUTPUTS.items():
        assert outputs[output]["value"] == variables[variable]
    assert set(REQUIRED_OUTPUTS) <= set(outputs)
    assert variables["dags_bucket_name"].startswith("airflow-")


def terraform_binary() -> str | None:
    return (
        shutil.which("terraform")
        or shutil.which("tofu")
        or next((str(p) for p in (REPO_ROOT / ".cache" / "go" / "bin").glob("tofu")), None)
    )


def test_terraform_fmt():
    binary = terraform_binary()
    if binary is None:
        pytest.skip("no terraform or tofu binary (make tools builds tofu from the Go module proxy)")
    result = subprocess.run([binary, "fmt", "-recursive", "-check", str(TF)], capture_output=True, text=True)
    assert result.returncode == 0, f"unformatted: {result.stdout}"


def test_checkov_finds_nothing_and_every_skip_is_justified():
    checkov = REPO_ROOT / ".cache" / "checkov-venv" / "bin" / "checkov"
    assert checkov.exists(), "run `make checkov-venv` (make test does)"
    env = {**os.environ, "BC_SKIP_MAPPING": "TRUE"}
    out = subprocess.run(
        [str(checkov), "-d", str(TF), "--framework", "terraform", "-o", "json", "--quiet", "--skip-download"],
        capture_output=True, text=True, env=env,
    ).stdout  # fmt: skip
    summary = json.loads(out[out.index("{") :])["summary"]
    assert summary["failed"] == 0 and summary["passed"] > 100, summary
    for tf in TF.rglob("*.tf"):
        for skip in re.findall(r"#checkov:skip=([A-Z0-9_]+)(:?)(.*)", tf.read_text()):
            assert skip[1] == ":" and len(skip[2].strip()) > 20, f"{tf}: {skip[0]} skipped without a reason"
