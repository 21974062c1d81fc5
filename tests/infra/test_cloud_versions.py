"""The version matrix (infra/cloud-versions.json) is the one place the cloud's versions are
written: Terraform deploys what it says, the pom resolves jars for it, MWAA's constraints and the
job image's lock are for it, and no environment overrides it."""

from __future__ import annotations

import json
import re

import hcl2
import pytest

from eo.cloud.artifacts import JOB_PYTHON
from eo.cloud.outputs import RuntimeMismatch, emr_runtime
from eo.cloud.versions import VERSIONS, cloud_versions
from eo.runtime.config import REPO_ROOT

pytestmark = pytest.mark.unit

TF = REPO_ROOT / "terraform"


def module_call(name: str) -> dict:
    with open(TF / "platform" / "main.tf") as fh:
        return next(m[f'"{name}"'] for m in hcl2.load(fh)["module"] if f'"{name}"' in m)


def test_terraform_deploys_the_matrix():
    with open(TF / "platform" / "main.tf") as fh:
        locals_ = {k: v for block in hcl2.load(fh)["locals"] for k, v in block.items()}
    assert "infra/cloud-versions.json" in locals_["versions"] and "jsondecode" in locals_["versions"]
    assert module_call("compute")["release_label"] == "${local.versions.emr_release}"
    assert module_call("orchestration")["airflow_version"] == "${local.versions.airflow}"
    with open(TF / "modules" / "orchestration" / "variables.tf") as fh:
        variable = next(v['"airflow_version"'] for v in hcl2.load(fh)["variable"] if '"airflow_version"' in v)
    assert "default" not in variable  # no second copy of the version to drift


@pytest.mark.parametrize("env", ["dev", "prod"])
def test_no_environment_overrides_a_version(env):
    text = (TF / "environments" / env / "terraform.tfvars").read_text()
    assert not re.search(r"^\s*(emr_release_label|airflow_version)\s*=", text, re.M)


def test_the_pom_the_constraints_the_lock_and_the_image_follow_the_matrix():
    matrix = cloud_versions()
    runtime = emr_runtime()  # raises RuntimeMismatch when the pom differs from the matrix
    assert (runtime.release_label, runtime.spark_version, runtime.delta_version) == (
        matrix.emr_release,
        matrix.spark,
        matrix.delta,
    )
    assert (TF / "mwaa-constraints" / matrix.airflow / "airflow_constraints.txt").exists()
    lock = (REPO_ROOT / "requirements.lock").read_text()
    assert re.search(rf"^deltalake=={re.escape(matrix.deltalake)}$", lock, re.M), (
        "requirements.lock pins another deltalake"
    )
    assert JOB_PYTHON.endswith(f"python{matrix.job_python}")


def test_a_pom_for_another_spark_than_the_matrix_is_refused(tmp_path):
    pom = (REPO_ROOT / "infra" / "maven" / "emr" / "pom.xml").read_text()
    other = pom.replace("<spark.version>4.1.3</spark.version>", "<spark.version>4.1.2</spark.version>")
    other = other.replace("4.1.3-amzn-0", "4.1.2-amzn-0")
    (tmp_path / "pom.xml").write_text(other)
    with pytest.raises(RuntimeMismatch, match=r"cloud-versions\.json says 4\.1\.3"):
        emr_runtime(tmp_path / "pom.xml")


def test_the_matrix_names_every_version_once():
    found = json.loads(VERSIONS.read_text())
    assert set(found) - {"about"} == {
        "airflow",
        "airflow_python",
        "emr_release",
        "spark",
        "delta",
        "job_python",
        "deltalake",
    }
