import subprocess
import sys

import pytest

from eo.runtime.config import REPO_ROOT


@pytest.fixture(scope="session")
def airflow_db():
    """A migrated metadata DB in the tests' Airflow home, and the project's DAGs parsed."""
    subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], check=True, capture_output=True)
    sys.path.insert(0, str(REPO_ROOT / "dags"))
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(REPO_ROOT / "dags"))
