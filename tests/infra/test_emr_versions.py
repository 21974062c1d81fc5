"""The EMR release Terraform deploys, the versions infra/maven/emr/pom.xml resolves for it, and the
jars `make jars-emr` put in .cache/jars/emr agree: otherwise a first deploy fails at the first job
run (jars built for another Spark, a log store from another Delta)."""

import re

import pytest

from eo.cloud.artifact_store import EMR_JARS_DIR, emr_jar_paths
from eo.cloud.outputs import emr_runtime
from eo.runtime.config import REPO_ROOT

pytestmark = pytest.mark.unit

TF = REPO_ROOT / "terraform"
EMR_LABEL = re.compile(r'"(emr-[a-z]*-?\d+\.\d+[\w.-]*)"')


def release_labels_in_terraform() -> dict[str, list[str]]:
    """Every EMR release label written anywhere in the Terraform code and tfvars -> where."""
    found: dict[str, list[str]] = {}
    for path in sorted(TF.rglob("*")):
        if path.suffix in (".tf", ".tfvars") and ".terraform" not in path.parts:
            for label in EMR_LABEL.findall(path.read_text()):
                found.setdefault(label, []).append(str(path.relative_to(TF)))
    return found


def test_no_release_label_hides_in_terraform():
    """Terraform names the release only through the matrix (test_cloud_versions.py checks the root)."""
    assert release_labels_in_terraform() == {}, release_labels_in_terraform()


def test_the_application_reports_the_release_it_runs():
    outputs = (TF / "modules" / "compute" / "outputs.tf").read_text()
    assert "value       = aws_emrserverless_application.spark.release_label" in outputs


def test_the_resolved_jars_are_the_releases():
    if not EMR_JARS_DIR.is_dir():
        pytest.skip("run `make jars-emr` to resolve the jars for the EMR release")
    names = {p.rsplit("/", 1)[-1] for p in emr_jar_paths()}  # raises when they are another release's
    assert set(emr_runtime().jar_names().values()) <= names
