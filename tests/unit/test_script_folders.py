"""A script's own folder comes first on sys.path (spark-submit streaming/run.py, batch/rebuild.py...):
a module there named like one of Python's own hides it from everything the job imports."""

from __future__ import annotations

import sys

import pytest

from eo.runtime.config import REPO_ROOT

pytestmark = pytest.mark.unit

# The folders of the scripts spark-submit runs (eo/runtime/submit.py, lab/bench/pipeline.py, lab/hooked.py, dags/).
SCRIPT_FOLDERS = ("streaming", "batch", "lab", "lab/bench")


@pytest.mark.parametrize("folder", SCRIPT_FOLDERS)
def test_no_module_beside_a_script_hides_a_standard_one(folder):
    names = {path.stem for path in (REPO_ROOT / folder).glob("*.py")}
    assert names, f"no scripts in {folder}"
    assert not names & sys.stdlib_module_names, f"{folder}: rename {sorted(names & sys.stdlib_module_names)}"
