"""The cloud's version matrix (infra/cloud-versions.json): the Airflow MWAA runs and its Python,
the EMR release with its Spark and Delta, the jobs' Python and delta-rs. Written once; Terraform
reads the file itself (terraform/platform/main.tf), Python reads it here, and the Makefile's
mwaa-venv through `python -m eo.cloud.versions airflow`."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, fields
from pathlib import Path

from eo.runtime.config import REPO_ROOT

VERSIONS = REPO_ROOT / "infra" / "cloud-versions.json"


@dataclass(frozen=True)
class CloudVersions:
    airflow: str  # MWAA's Airflow: terraform/mwaa-constraints/<this>/ holds its constraints
    airflow_python: str  # MWAA's interpreter for that Airflow (major.minor)
    emr_release: str  # the EMR Serverless release label
    spark: str  # the upstream Spark version of that release's Spark (4.1.3 for 4.1.3-amzn-0)
    delta: str  # likewise for its Delta
    job_python: str  # the job image's Python (eo/cloud/job_image.py)
    deltalake: str  # delta-rs's Python package in the job image (requirements.lock pins it)


def cloud_versions(path: Path = VERSIONS) -> CloudVersions:
    """The matrix; a missing or extra key is an error naming it."""
    found = json.loads(path.read_text())
    found.pop("about", None)
    names = {f.name for f in fields(CloudVersions)}
    if set(found) != names:
        raise ValueError(f"{path}: keys {sorted(found)} are not {sorted(names)}")
    return CloudVersions(**found)


if __name__ == "__main__":  # python -m eo.cloud.versions <key>: one value, for the Makefile
    print(getattr(cloud_versions(), sys.argv[1]))
