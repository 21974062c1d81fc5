"""ops.quarantine as a package: `python -m ops.quarantine` still starts it, and it imports no `__main__` module."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import pytest

from eo.runtime.config import REPO_ROOT, ConfigError
from eo.runtime.jars import MissingJarsError
from ops.quarantine import cli

pytestmark = pytest.mark.unit

PACKAGE = REPO_ROOT / "ops" / "quarantine"


def test_python_m_runs_the_command_line():
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "ops.quarantine", "list", "--since", "yesterday"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        "python -m ops.quarantine list: error: argument --since: bad timestamp 'yesterday': "
        "use ISO 8601, e.g. 2026-11-05T10:00:00Z (see --help)\n"
    )


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda p: p.name)
def test_no_module_imports_a_main_module(path):
    imported = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    assert not {name for name in imported if name.split(".")[-1] == "__main__"}


@pytest.mark.parametrize(
    ("where", "error", "code"),
    [
        ("load_settings", ConfigError("unknown environment 'nope'"), 2),
        ("build_session", MissingJarsError("jars not found in .cache/jars; run `make jars` first"), 3),
    ],
)
def test_known_failures_are_one_line_in_quarantines_words(monkeypatch, capsys, where, error, code):
    def raise_it(*_args):
        raise error

    monkeypatch.setattr(cli, where, raise_it)
    assert cli.main(["list"]) == code
    assert capsys.readouterr() == ("", f"quarantine: {error}\n")
