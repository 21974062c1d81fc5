"""The Airflow commands the docs give: every one goes through `make airflow-cli ARGS="..."`, which
runs it on the project's Airflow and its PostgreSQL metadata (infra/airflow.py `cli`)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from eo.runtime.config import REPO_ROOT

WRAPPED = re.compile(r'make airflow-cli ARGS="([^"]+)"')
# An `airflow <subcommand>` not wrapped: it would run without the project's environment.
BARE = re.compile(
    r"(?<![\w/-])(?:\.venv/bin/)?airflow\s+(?:backfill|dags|tasks|db|connections|variables|config|pools|jobs|assets)\b"
)


def documented_files() -> list[Path]:
    """The README, docs/ and the DAGs' own docs (the UI shows them)."""
    docs, dags = sorted((REPO_ROOT / "docs").glob("*.md")), sorted((REPO_ROOT / "dags").glob("*.py"))
    return [REPO_ROOT / "README.md", *docs, *dags]


def airflow_commands(text: str) -> list[list[str]]:
    """The arguments of each `make airflow-cli ARGS="..."` in `text` (a command may wrap lines);
    a placeholder (`...`, `<command>`) is not a command."""
    found = [" ".join(args.split()) for args in WRAPPED.findall(text)]
    return [shlex.split(args) for args in found if "..." not in args and "<" not in args]


def bare_commands(text: str) -> list[str]:
    """Each `airflow <subcommand>` in `text` outside `make airflow-cli ARGS="..."`."""
    return [m.group(0) for m in BARE.finditer(WRAPPED.sub("", text))]


FENCE = re.compile(r"```(?:bash|sh|shell)\n(.*?)```", re.DOTALL)


def shell_commands(text: str) -> list[str]:
    """The commands of the ```bash blocks in `text`: continuation lines joined, comments and
    environment assignments before the command dropped."""
    commands = []
    for block in FENCE.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0].strip()
            words = line.split()
            while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
                words.pop(0)
            if words and not line.startswith("#"):
                commands.append(" ".join(words))
    return commands


def python_module_command(command: str) -> tuple[str, list[str], list[str]] | None:
    """(module, its leading words: verb or table, the options it names) of a `python -m` command."""
    if not re.match(r"^(?:\.venv/bin/)?python3? -m ", command):
        return None
    words = shlex.split(command)
    rest = words[3:]
    leading = []
    for word in rest:
        if word.startswith("-"):
            break
        leading.append(word)
    options = sorted({w.split("=", 1)[0] for w in rest if w.startswith("--") and w != "--"})
    return words[2], leading, options
