"""A declaration file with a mistake stops any command that loads it in one line, exit 2: the
code is copied, its clicks declaration broken, and a module that reads it imported."""

import os
import shutil
import subprocess
import sys

import pytest

from eo.runtime.config import REPO_ROOT

pytestmark = pytest.mark.integration


def test_a_broken_declaration_stops_an_import_in_one_line(tmp_path):
    shutil.copytree(REPO_ROOT / "eo", tmp_path / "eo", ignore=shutil.ignore_patterns("__pycache__"))
    declaration = tmp_path / "eo" / "core" / "sources" / "clicks.schema.json"
    declaration.write_text(declaration.read_text().replace('"format": "date-time"', '"format": "date"'))
    done = subprocess.run(
        [sys.executable, "-c", "import eo.core.tables"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr == (
        "source clicks refused: field event_time has a type the reading does not know (docs/sources.md)\n"
    )
