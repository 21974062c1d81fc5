"""The Terraform code through the tools themselves: `terraform fmt -check` (or OpenTofu's) and
checkov. Integration: both run as subprocesses (`make test` installs them: terraform-tool and
checkov-venv)."""

import json
import os
import re
import shutil
import subprocess

import pytest

from jobs.config import REPO_ROOT

pytestmark = pytest.mark.integration

TF = REPO_ROOT / "terraform"


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
