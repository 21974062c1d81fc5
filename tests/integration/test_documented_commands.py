"""The commands the docs give in their ```bash blocks work as written on this clone: each
`python -m` module exists and its `--help` (after the same verb or table) names every option the
docs use; each `make` target and variable is the Makefile's. The Airflow commands run for real
against a real Airflow in tests/e2e/test_airflow_ui.py; the docs' journal of experiments
(docs/history/, outside the documented files) is history, not instructions, and is left out."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest

from eo.runtime.config import REPO_ROOT
from tests.documented import documented_files, python_module_command, shell_commands

pytestmark = pytest.mark.integration

INSTRUCTIONS = [p for p in documented_files() if p.suffix == ".md"]
COMMANDS = sorted({c for p in INSTRUCTIONS for c in shell_commands(p.read_text())})
MODULES = sorted(
    {
        (m, tuple(lead), tuple(opts))
        for c in COMMANDS
        if (found := python_module_command(c))
        for m, lead, opts in [found]
    }
)
MAKEFILE = (REPO_ROOT / "Makefile").read_text()


def test_the_docs_give_commands_to_check():
    assert len(MODULES) >= 10 and any(c.startswith("make ") for c in COMMANDS)


@pytest.mark.parametrize(
    ("module", "leading", "options"), MODULES, ids=[" ".join([m, *lead]) for m, lead, _ in MODULES]
)
def test_a_documented_python_command_takes_the_options_it_is_given(module, leading, options):
    leading, options = list(leading), list(options)
    command = [sys.executable, "-m", module, *leading, "--help"]
    if module == "eo.runtime.submit":  # spark-submits a script, as spark-submit runs it: the script's own options
        assert (REPO_ROOT / leading[0]).is_file(), leading
        command = [sys.executable, leading[0], *leading[1:], "--help"]
    shown = subprocess.run(
        command,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert shown.returncode == 0, f"{' '.join(command[1:])}: {shown.stderr[-1500:]}"
    missing = [o for o in options if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", shown.stdout)]
    assert not missing, f"{' '.join(command[1:-1])} has no {missing}:\n{shown.stdout}"


def test_each_documented_make_target_and_variable_is_the_makefiles():
    targets = set(re.findall(r"^([a-z][\w-]*):", MAKEFILE, re.MULTILINE))
    for command in [c for c in COMMANDS if c.startswith("make ")]:
        words = shlex.split(command)[1:]
        for word in words:
            if "=" in word:
                variable = word.split("=", 1)[0]
                assert f"$({variable})" in MAKEFILE, f"{command}: the Makefile does not read {variable}"
            else:
                assert word in targets, f"{command}: no target {word!r}"
