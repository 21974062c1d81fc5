"""The Terraform code through the tools themselves: `terraform fmt -check` (or OpenTofu's) and
checkov. Integration: both run as subprocesses (`make test` installs them: terraform-tool and
checkov-venv)."""

import json
import os
import re
import shutil
import subprocess

import pytest

from eo.runtime.config import REPO_ROOT
from infra.s3 import tfvars

pytestmark = pytest.mark.integration

TF = REPO_ROOT / "terraform"
ENVIRONMENTS = sorted(p.name for p in (TF / "environments").iterdir() if p.is_dir())


def terraform_binary() -> str | None:
    return (
        shutil.which("terraform")
        or shutil.which("tofu")
        or next((str(p) for p in (REPO_ROOT / ".cache" / "go" / "bin").glob("tofu")), None)
    )


def test_terraform_fmt():
    binary = terraform_binary()
    if binary is None:
        pytest.skip("no terraform or tofu binary (`make terraform-tool` builds tofu from the Go module proxy)")
    result = subprocess.run([binary, "fmt", "-recursive", "-check", str(TF)], capture_output=True, text=True)
    assert result.returncode == 0, f"unformatted: {result.stdout}"


@pytest.mark.parametrize("environment", ENVIRONMENTS)
def test_checkov_finds_nothing_in_each_environment(environment):
    """The root with the environment's tfvars, so every count and for_each expands as it deploys."""
    checkov = REPO_ROOT / ".cache" / "checkov-venv" / "bin" / "checkov"
    assert checkov.exists(), "run `make checkov-venv` (make test does)"
    env = {**os.environ, "BC_SKIP_MAPPING": "TRUE"}
    var_file = TF / "environments" / environment / "terraform.tfvars"
    out = subprocess.run(
        [str(checkov), "-d", str(TF), "--framework", "terraform", "-o", "json", "--skip-download",
         "--var-file", str(var_file)],
        capture_output=True, text=True, env=env,
    ).stdout  # fmt: skip
    report = json.loads(out[out.index("{") :])
    summary = report["summary"]
    assert summary["failed"] == 0 and summary["passed"] > 150, summary
    subnets = {
        check["resource"]
        for check in report["results"]["passed_checks"]
        if check["resource"].startswith("module.network.aws_subnet.private[")
    }
    assert len(subnets) == len(tfvars(var_file)["availability_zones"]), "checked with the environment's values"


def test_every_checkov_skip_is_justified():
    for tf in TF.rglob("*.tf"):
        for skip in re.findall(r"#checkov:skip=([A-Z0-9_]+)(:?)(.*)", tf.read_text()):
            assert skip[1] == ":" and len(skip[2].strip()) > 20, f"{tf}: {skip[0]} skipped without a reason"
