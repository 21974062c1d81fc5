"""terraform/mwaa-requirements.txt installs on MWAA. MWAA runs `pip3 install -r requirements.txt`
with its image's constraints (amazon-mwaa-docker-images: images/airflow/<version>/python/mwaa/utils/
user_requirements.py): always mwaa_essential_constraints.txt (Airflow, Celery, Flask, SQLAlchemy),
and airflow_constraints.txt (Airflow's own constraints for its Python) unless the requirements
name a constraint file. One pin the constraints refuse fails the whole install, and the DAGs lose
the Spark provider they all import. Both files are vendored in terraform/mwaa-constraints/<version>/.

The unit tests here check offline that they are the files of the Airflow version Terraform deploys
and that no requirement contradicts them; the integration test runs pip's resolver over the
requirements with them, for MWAA's Python and platform, without installing anything."""

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from eo.cloud.versions import cloud_versions
from eo.runtime.config import REPO_ROOT

TF = REPO_ROOT / "terraform"
REQUIREMENTS = TF / "mwaa-requirements.txt"
# MWAA's interpreter for Airflow 3.0.6: PYTHON_VERSION=3.12.10 in images/airflow/3.0.6/Dockerfiles/Dockerfile.base
# (Amazon Linux 2023: glibc 2.34, x86_64).
MWAA_PYTHON = cloud_versions().airflow_python
MWAA_GLIBC_MINOR = 34
# Packages pinned in the constraints that publish no wheel, only an sdist (pyspark 4.0.0's is 434 MB):
# pip cannot read their metadata across platforms, so the resolver gets a metadata-only stand-in at
# the pinned version. Their own dependencies are left out: the constraints are one resolved, consistent
# set that includes them. A new one shows as "The user requested (constraint) <name>==<version>".
SDIST_ONLY = ("pyspark", "dill")
# The line MWAA looks for (user_requirements.py; it matches commented-out lines too): with one, it
# leaves out airflow_constraints.txt.
MWAA_CONSTRAINT_LINE = re.compile(r"-c |--constraint ")


def deployed_airflow_version() -> str:
    """The matrix's Airflow, which the platform root passes to the orchestration module (checked in
    tests/infra/test_cloud_versions.py)."""
    return cloud_versions().airflow


def constraints_dir() -> Path:
    return TF / "mwaa-constraints" / deployed_airflow_version()


def constraint_files() -> list[Path]:
    return [constraints_dir() / "mwaa_essential_constraints.txt", constraints_dir() / "airflow_constraints.txt"]


def pins(path: Path) -> dict[str, str]:
    """name -> version of every `name==version` line of a constraints file."""
    found = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            found[canonicalize_name(name)] = version
    return found


def all_pins() -> dict[str, str]:
    essential, airflow = (pins(p) for p in constraint_files())
    for name in essential.keys() & airflow.keys():
        assert essential[name] == airflow[name], f"the two constraint files disagree on {name}"
    return airflow | essential


def requirements() -> list[Requirement]:
    lines = (line.split("#", 1)[0].strip() for line in REQUIREMENTS.read_text().splitlines())
    return [Requirement(line) for line in lines if line]


# -- offline --------------------------------------------------------------------------------------


@pytest.mark.unit
def test_the_module_uploads_the_checked_file():
    main = (TF / "platform" / "main.tf").read_text()
    assert 'requirements_file = "${path.module}/../mwaa-requirements.txt"' in main


@pytest.mark.unit
def test_the_vendored_constraints_are_those_of_the_deployed_airflow_and_python():
    """A version bump in Terraform fails here until the new version's constraints are vendored."""
    version = deployed_airflow_version()
    essential, airflow = constraint_files()
    assert essential.is_file() and airflow.is_file(), f"vendor MWAA's constraints for Airflow {version}"
    assert pins(essential)["apache-airflow"] == version
    assert f"apache/airflow/constraints-{version}/constraints-{MWAA_PYTHON}.txt" in airflow.read_text()
    assert "amazon-mwaa-docker-images" in airflow.read_text().splitlines()[0]


@pytest.mark.unit
def test_the_requirements_keep_mwaa_s_constraints():
    """A constraint line, even in a comment, makes MWAA leave out Airflow's constraints."""
    assert not [line for line in REQUIREMENTS.read_text().splitlines() if MWAA_CONSTRAINT_LINE.search(line)]


@pytest.mark.unit
def test_no_requirement_refuses_the_constrained_version():
    constrained = all_pins()
    refused = {
        str(r): constrained[canonicalize_name(r.name)]
        for r in requirements()
        if canonicalize_name(r.name) in constrained
        and not r.specifier.contains(constrained[canonicalize_name(r.name)], prereleases=True)
    }
    assert not refused, f"MWAA's constraints pin another version: {refused}"


@pytest.mark.unit
def test_the_requirements_name_what_the_dags_import():
    names = {canonicalize_name(r.name) for r in requirements()}
    assert "apache-airflow-providers-amazon" in names
    # Not the Spark provider: its pyspark source archive (434 MB) timed MWAA's install out.
    assert "apache-airflow-providers-apache-spark" not in names
    assert {"psycopg", "confluent-kafka", "aws-msk-iam-sasl-signer-python"} <= names


# -- pip's resolver ---------------------------------------------------------------------------------


def stand_in_wheel(folder: Path, name: str, version: str) -> None:
    stem = f"{name.replace('-', '_')}-{version}"
    with zipfile.ZipFile(folder / f"{stem}-py3-none-any.whl", "w") as whl:
        whl.writestr(f"{stem}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        whl.writestr(
            f"{stem}.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        whl.writestr(f"{stem}.dist-info/RECORD", "")


def resolve(requirements_file: Path, tmp: Path) -> tuple[subprocess.CompletedProcess, Path]:
    """pip's resolver, as MWAA's `pip3 install` would run it, installing nothing (--dry-run; --target
    is what pip demands to resolve for another Python and platform, and ignores what is installed)."""
    stand_ins = tmp / "stand-ins"
    stand_ins.mkdir()
    constrained = all_pins()
    for name in SDIST_ONLY:
        stand_in_wheel(stand_ins, name, constrained[name])
    platforms = [f"manylinux_2_{minor}_x86_64" for minor in range(MWAA_GLIBC_MINOR, 16, -1)] + ["manylinux2014_x86_64"]
    report = tmp / "report.json"
    cmd = [
        sys.executable, "-m", "pip", "install", "--dry-run", "--report", str(report), "--target", str(tmp / "target"),
        "--python-version", MWAA_PYTHON, "--implementation", "cp", "--only-binary=:all:",
        *(arg for p in platforms for arg in ("--platform", p)),
        "--find-links", str(stand_ins), "--disable-pip-version-check", "--progress-bar", "off",
        "-r", str(requirements_file),
        *(arg for c in constraint_files() for arg in ("-c", str(c))),
    ]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=REPO_ROOT), report


def why(run: subprocess.CompletedProcess) -> str:
    """pip's output without its progress (one "Collecting", "Using cached"... line a package)."""
    progress = ("Collecting", "Using cached", "Downloading", "Processing", "Looking in", "Obtaining")
    return "\n".join(line for line in (run.stdout + run.stderr).splitlines() if not line.strip().startswith(progress))


@pytest.mark.integration
@pytest.mark.slow  # ~1 min on 2 cores: pip reads the index pages of ~160 packages, botocore's among them
def test_the_requirements_resolve_under_mwaa_s_constraints(tmp_path):
    run, report = resolve(REQUIREMENTS, tmp_path)
    assert run.returncode == 0, f"pip cannot install terraform/mwaa-requirements.txt on MWAA:\n{why(run)}"
    resolved = {
        canonicalize_name(item["metadata"]["name"]): item["metadata"]["version"]
        for item in json.loads(report.read_text())["install"]
    }
    constrained = all_pins()
    assert resolved["apache-airflow"] == deployed_airflow_version()  # not upgraded or downgraded away
    assert resolved.get("apache-airflow-providers-amazon") == constrained["apache-airflow-providers-amazon"]
    assert "pyspark" not in resolved  # nothing pulls its source archive onto MWAA
    assert {name: v for name, v in resolved.items() if name in constrained and constrained[name] != v} == {}


@pytest.mark.integration
def test_the_resolver_refuses_a_pin_the_constraints_refuse(tmp_path):
    """The check above is not vacuous: a pin off the constraints (the confluent-kafka==2.16.1 this
    file once had, while Airflow 3.0.6 pins 2.11.1) fails to resolve."""
    constrained = all_pins()
    assert constrained["confluent-kafka"] != "2.16.1"
    old = tmp_path / "requirements.txt"
    old.write_text(re.sub(r"(?m)^confluent-kafka.*$", "confluent-kafka==2.16.1", REQUIREMENTS.read_text()))
    assert "confluent-kafka==2.16.1" in old.read_text()
    run, _ = resolve(old, tmp_path)
    assert run.returncode != 0
    assert "ResolutionImpossible" in run.stderr and "confluent-kafka" in run.stderr, why(run)
