"""What spark-submit, EMR Serverless and the DAGs run is a script of jobs/, never a module of the
packages: spark-submit puts a script's folder first on sys.path, so a module beside a script becomes
a top-level module (streaming's `plan` and `query`, batch's `verify`) and a script that is also a
package module loads twice (as `__main__` and under its own name). jobs/ holds nothing but thin
scripts, each calling one entry point of the packages the job zip carries (docs/layout.md)."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import re
import sys
from pathlib import Path

import pytest

from eo.cloud.artifacts import ENTRY_POINTS
from eo.runtime.config import REPO_ROOT
from eo.runtime.submit import PACKAGES
from ops.stream_service import STREAM_SCRIPT

pytestmark = pytest.mark.unit

JOBS = REPO_ROOT / "jobs"
JOB_SCRIPTS = sorted(JOBS.glob("*.py"))
# The folders of the scripts spark-submit runs: jobs/, and the lab's own (lab/hooked.py, lab/bench/pipeline.py).
SCRIPT_FOLDERS = ("jobs", "lab", "lab/bench")
# The code that names scripts to run: the product, the services, the DAGs and the lab.
CALLERS = ("eo", "streaming", "batch", "ops", "producer", "infra", "dags", "plugins", "lab")
SCRIPT_PATH = re.compile(r"^[a-z_]+(/[a-z_]+)*/[a-z_]+\.py$")


def _source_files(folders=CALLERS) -> list[Path]:
    return [path for folder in folders for path in sorted((REPO_ROOT / folder).rglob("*.py"))]


def _string_constants(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def _dag_scripts() -> list[str]:
    """Every `script=` the DAGs give their Spark tasks."""
    found = []
    for path in sorted((REPO_ROOT / "dags").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.keyword) and node.arg == "script":
                assert isinstance(node.value, ast.Constant), f"{path}: a script the test cannot read"
                found.append(node.value.value)
    return found


def test_jobs_holds_the_scripts_and_nothing_else():
    assert {p.name for p in JOBS.iterdir() if p.name != "__pycache__"} == {p.name for p in JOB_SCRIPTS}
    assert {p.stem for p in JOB_SCRIPTS} >= {"stream", "rebuild", "verify", "maintenance", "reset", "explain"}


@pytest.mark.parametrize("name", sorted({*ENTRY_POINTS, STREAM_SCRIPT, *_dag_scripts()}))
def test_every_submitted_entry_point_is_a_script_of_jobs(name):
    """What artifacts.py uploads, the stream service starts and the DAGs run; on EMR each must be uploaded."""
    assert name.startswith("jobs/") and (REPO_ROOT / name).is_file(), name
    assert name in ENTRY_POINTS, f"{name} is run but not uploaded (eo/cloud/artifacts.py ENTRY_POINTS)"


def test_no_code_names_a_package_module_as_a_script():
    """A script path in code (what submit_command, run_job, job_driver or a DAG get) is a script of
    jobs/ or the lab's own; never streaming/, batch/ or ops/, which the zip carries as packages."""
    named = {
        (str(path.relative_to(REPO_ROOT)), value)
        for path in _source_files()
        for value in _string_constants(path)
        if SCRIPT_PATH.match(value) and (REPO_ROOT / value).is_file()
    }
    assert named, "no script named anywhere: the scan is broken"
    wrong = sorted((where, value) for where, value in named if not value.startswith(("jobs/", "lab/")))
    assert not wrong, wrong
    assert not [(w, v) for w, v in named if v.startswith("lab/") and w.split("/")[0] != "lab"]


def _is_main_guard(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Compare)
        and ast.unparse(node.test) in ('__name__ == "__main__"', "__name__ == '__main__'")
    )


@pytest.mark.parametrize("script", JOB_SCRIPTS, ids=[p.name for p in JOB_SCRIPTS])
def test_a_job_script_is_thin_its_imports_and_one_call(script):
    tree = ast.parse(script.read_text())
    body = list(tree.body)
    assert ast.get_docstring(tree) and f"jobs/{script.name}" in ast.get_docstring(tree), "a docstring with its usage"
    body = body[1:]
    imports = [node for node in body if isinstance(node, (ast.Import, ast.ImportFrom))]
    rest = [node for node in body if node not in imports]
    assert len(rest) == 1 and _is_main_guard(rest[0]), "imports, then `if __name__ == '__main__':` only"
    (call,) = rest[0].body
    assert ast.unparse(call).startswith("sys.exit(") and len(call.value.args) == 1, ast.unparse(call)
    inner = call.value.args[0]
    assert isinstance(inner, ast.Call) and not inner.args and not inner.keywords, ast.unparse(call)
    entry = [n for n in imports if isinstance(n, ast.ImportFrom)]
    assert len(entry) == 1 and [a.name for a in entry[0].names] == [inner.func.id], "one entry point, imported"
    assert entry[0].module.split(".")[0] in PACKAGES, f"{entry[0].module} is not in the job zip"
    assert all(a.name == "sys" for n in imports if isinstance(n, ast.Import) for a in n.names)
    assert callable(getattr(importlib.import_module(entry[0].module), inner.func.id))


def test_nothing_imports_the_job_scripts():
    for path in _source_files():
        for node in ast.walk(ast.parse(path.read_text())):
            modules = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            assert not [m for m in modules if m.split(".")[0] == "jobs"], f"{path} imports a job script"


def test_the_stream_runs_only_as_its_package():
    """streaming/run.py is reached through jobs/ and `python -m streaming`, never as a script."""
    tree = ast.parse((REPO_ROOT / "streaming" / "run.py").read_text())
    assert not [node for node in tree.body if _is_main_guard(node)]


RUN_AS_MODULE = re.compile(r"""-m["']?,?\s*["']?((?:streaming|batch|ops|eo|producer|infra|lab)(?:\.\w+)*)""")


def test_every_module_run_with_python_m_runs_something():
    """A module the code, the Makefile or the docs run with `python -m` has a main guard (or is a
    package with __main__.py): one without would exit 0 having done nothing."""
    sources = [*_source_files(), REPO_ROOT / "Makefile", *(REPO_ROOT / "docs").rglob("*.md")]
    named = {m for path in sources for m in RUN_AS_MODULE.findall(path.read_text()) if not m.endswith(".py")}
    assert "batch.maintenance" in named and "streaming" in named, sorted(named)
    silent = []
    for module in sorted(named):
        path = REPO_ROOT.joinpath(*module.split("."))
        if (path / "__main__.py").is_file():
            continue
        if path.with_suffix(".py").is_file():
            tree = ast.parse(path.with_suffix(".py").read_text())
            if not [node for node in tree.body if _is_main_guard(node)]:
                silent.append(module)
    assert not silent, f"run with python -m but without a main guard: {silent}"


@pytest.mark.parametrize("folder", SCRIPT_FOLDERS)
def test_no_module_beside_a_script_hides_another(folder):
    names = {path.stem for path in (REPO_ROOT / folder).glob("*.py")}
    assert names, f"no scripts in {folder}"
    assert not names & sys.stdlib_module_names, f"{folder}: rename {sorted(names & sys.stdlib_module_names)}"
    assert not names & set(PACKAGES), f"{folder}: {sorted(names & set(PACKAGES))} would hide a package of the zip"
    if folder == "jobs":  # nothing the jobs import may be hidden either (a library's top-level module)
        installed = set(importlib.metadata.packages_distributions())
        assert not names & installed, f"{folder}: rename {sorted(names & installed)}"
