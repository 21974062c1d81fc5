"""The versions `make cloud-smoke` ran, and how they differ from the matrix Terraform deploys
(infra/cloud-versions.json): Spark as the job venv's pyspark says it and as the stream's driver
logged it, Delta from the delta-spark jar on the job runs' classpath, the job venv's Python and
deltalake, and Airflow as the MWAA venv (make mwaa-venv) has it installed, or else the matrix's."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from eo.cloud.versions import CloudVersions, cloud_versions
from eo.runtime.config import REPO_ROOT

MWAA_VENV = REPO_ROOT / ".cache" / "mwaa-venv"
DRIVER_SAYS = re.compile(r"Running Spark version (\S+)")
DELTA_JAR = re.compile(r"delta-spark_[0-9.]+_[0-9.]+-(.+)\.jar")
# Each version the report gives, and the matrix's key it must equal.
MATRIX_KEYS = {
    "spark": "spark",
    "delta": "delta",
    "airflow": "airflow",
    "python": "job_python",
    "deltalake": "deltalake",
}


def _venv_answer(venv: Path, code: str) -> str:
    run = subprocess.run([str(venv / "bin" / "python"), "-c", code], check=True, text=True, capture_output=True)
    return run.stdout.strip()


def installed_airflow(venv: Path = MWAA_VENV) -> str | None:
    found = sorted(venv.glob("lib/python*/site-packages/apache_airflow-*.dist-info"))
    return found[0].name.removeprefix("apache_airflow-").removesuffix(".dist-info") if found else None


def ran(venv: Path, jars: list[str], driver_logs: list[Path], mwaa_venv: Path = MWAA_VENV) -> tuple[dict, dict]:
    """The versions run (None where unknown) and where each came from."""
    code = (
        "import sys, pyspark, importlib.metadata as m; "
        "print(pyspark.__version__, '%d.%d' % sys.version_info[:2], m.version('deltalake'))"
    )
    spark, python, deltalake = _venv_answer(venv, code).split()
    logged = {m for path in driver_logs if path.exists() for m in DRIVER_SAYS.findall(path.read_text(errors="replace"))}
    if logged and logged != {spark}:  # the driver ran another Spark than the venv's pyspark
        spark = ",".join(sorted(logged))
    deltas = sorted({m.group(1) for j in jars if (m := DELTA_JAR.fullmatch(Path(j).name))})
    airflow = installed_airflow(mwaa_venv)
    versions = {
        "spark": spark,
        "delta": deltas[0] if len(deltas) == 1 else ",".join(deltas) or None,
        "airflow": airflow or cloud_versions().airflow,
        "python": python,
        "deltalake": deltalake,
    }
    sources = {
        "spark": "the job venv's pyspark" + (", the driver's log" if logged else ""),
        "delta": "the delta-spark jar on the job runs' classpath",
        "airflow": f"installed in {mwaa_venv.relative_to(REPO_ROOT)}" if airflow else "the matrix (no MWAA venv)",
        "python": "the job venv",
        "deltalake": "the job venv",
    }
    return versions, sources


def differences(versions: dict, matrix: CloudVersions | None = None) -> list[str]:
    """One phrase per version that is not the matrix's."""
    matrix = matrix or cloud_versions()
    wanted = {name: getattr(matrix, key) for name, key in MATRIX_KEYS.items()}
    differ = [name for name in wanted if versions.get(name) != wanted[name]]
    return [f"{name} {versions.get(name)} (matrix {wanted[name]})" for name in differ]
