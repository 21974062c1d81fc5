"""What a DAG file imports at parse time: Airflow's DAG processor parses every file over and over,
so none may pull in Spark, Great Expectations, Delta or pandas (the jobs import them when they run).

Integration: each file is parsed in a fresh interpreter (a subprocess), where the modules it
imports show; this process has imported them all already. What the check asserts is the imports,
not a parse time: a wall-clock limit would pass or fail with the machine's load."""

import subprocess
import sys

import pytest

from eo.runtime.config import REPO_ROOT

pytestmark = pytest.mark.integration

DAGS = REPO_ROOT / "dags"
DAG_FILES = sorted(p.stem for p in DAGS.glob("*.py"))  # every DAG file (shared code is in eo_common/)
HEAVY = ("pyspark", "great_expectations", "delta", "pandas")

PARSE = """
import runpy, sys
sys.path.insert(0, {dags!r})
import airflow.sdk, eo_common.platform  # what every DAG file needs anyway: not the file's own cost
before = set(sys.modules)
runpy.run_path({path!r})
print("imported:" + ",".join(sorted(m for m in {heavy!r} if m in sys.modules)))
print("warm:" + ",".join(sorted(m for m in {heavy!r} if m in before)))
"""


@pytest.mark.parametrize("name", DAG_FILES)
def test_each_dag_file_parses_without_heavy_imports(name):
    code = PARSE.format(dags=str(DAGS), path=str(DAGS / f"{name}.py"), heavy=HEAVY)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    lines = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    assert lines.keys() >= {"imported", "warm"}, out
    assert lines["warm"] == "", f"Airflow itself imports {lines['warm']}: the check would say nothing"
    assert lines["imported"] == "", f"{name} imports {lines['imported']} at parse time"
