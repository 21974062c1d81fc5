"""The DAGs on the Airflow Terraform deploys: MWAA's version (terraform/mwaa-constraints/<version>/,
kept equal to the orchestration module's by tests/infra/test_mwaa_requirements.py), installed with
MWAA's requirements and constraints in a venv of its own (`make mwaa-venv`). Every DAG file imports
and every DAG serializes as its scheduler would store it, the platform's plugin loads, and nothing
pulls Spark onto MWAA. (The suite's own Airflow is newer: tests/dags run the DAGs there.)"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from eo.runtime.config import REPO_ROOT
from tests.infra.test_mwaa_requirements import deployed_airflow_version

pytestmark = pytest.mark.integration

MWAA_PYTHON = REPO_ROOT / ".cache" / "mwaa-venv" / "bin" / "python"

PROBE = """
import importlib, importlib.metadata, json, airflow
from airflow.models.dagbag import DagBag
from airflow.serialization.serialized_objects import SerializedDAG

bag = DagBag(dag_folder="dags", include_examples=False)
serialized = {}
for dag_id, dag in bag.dags.items():
    again = SerializedDAG.from_dict(SerializedDAG.to_dict(dag))
    serialized[dag_id] = sorted(again.task_ids)
importlib.import_module("eo_platform")
print(json.dumps({
    "version": airflow.__version__,
    "errors": {f: e.strip().splitlines()[-1] for f, e in bag.import_errors.items()},
    "dags": serialized,
    "spark": [d.metadata["Name"] for d in importlib.metadata.distributions()
              if d.metadata["Name"].lower() in ("pyspark", "apache-airflow-providers-apache-spark")],
}))
"""


def test_the_dags_import_and_serialize_on_the_airflow_mwaa_runs(tmp_path):
    assert MWAA_PYTHON.exists(), "no venv of MWAA's Airflow: make mwaa-venv (make test builds it)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env |= {
        "AIRFLOW_HOME": str(tmp_path),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{tmp_path / 'airflow.db'}",
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "PYTHONPATH": os.pathsep.join(str(REPO_ROOT / p) for p in ("", "dags", "plugins")),
    }
    done = subprocess.run(
        [str(MWAA_PYTHON), "-c", PROBE], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["version"] == deployed_airflow_version()
    assert found["errors"] == {}
    assert set(found["dags"]) == {"rebuild_derived", "verify_agreement", "stream_supervisor", "lake_maintenance"}
    assert "rebuild_interval" in found["dags"]["rebuild_derived"] and "verify" in found["dags"]["verify_agreement"]
    assert found["spark"] == []
