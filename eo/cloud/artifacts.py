"""What a job run needs besides its release: the job code, the entry points, the configuration and
the environment's Terraform outputs, as objects of the artifacts bucket.

    build/artifacts/pyfiles/eo-jobs.zip     the packages eo, streaming, batch, ops
    build/artifacts/home/eo-conf.zip        conf/*.toml
    build/artifacts/entrypoints/<script>    jobs/stream.py, jobs/rebuild.py, ...
    home/eo-outputs.zip                     terraform-outputs.json: written by Terraform itself

`make artifacts` builds the folder (with the release's jars, eo/cloud/emr_serverless.py) and
`terraform apply` uploads it. The job driver passes both zips with `spark.archives`: EMR unpacks
them into the working folder of the driver and of every executor (`eo_home/`, `eo_outputs/`), and
`EO_HOME` and `EO_TF_OUTPUTS` tell the job where they are. Nothing else reaches a job run:
`make cloud-smoke` runs the same files in an empty folder with only what the job driver passes.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

from eo.runtime.config import REPO_ROOT, Settings, config_file

# The scripts job runs name (jobs/): each calls one entry point of the packages in the zip.
ENTRY_POINTS = ("jobs/stream.py", "jobs/rebuild.py", "jobs/verify.py", "jobs/maintenance.py", "jobs/reset.py")
BUILD_DIR = REPO_ROOT / "build" / "artifacts"
CONF_KEY = "home/eo-conf.zip"
OUTPUTS_KEY = "home/eo-outputs.zip"  # Terraform's archive_file makes the same (terraform/platform/main.tf)
OUTPUTS_MEMBER = "terraform-outputs.json"
HOME_ALIAS, OUTPUTS_ALIAS = "eo_home", "eo_outputs"  # the folders the runtime unpacks them into
# Where the job's Python is in the job image (eo/cloud/job_image.py): the release's own python3 is
# older than the code's 3.11.
JOB_PYTHON = "/usr/bin/python3.11"


def artifact_key(kind: str, path: Path | str) -> str:
    """The object key of an uploaded file: jars/<name>, pyfiles/<name>, entrypoints/<path>."""
    return f"{kind}/{Path(path).name}" if kind in ("jars", "pyfiles") else f"entrypoints/{path}"


def _zip(target: Path, members: dict[str, Path | bytes]) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, source in sorted(members.items()):
            archive.writestr(name, source if isinstance(source, bytes) else source.read_bytes())
    tmp.replace(target)
    return target


def build_application(folder: Path = BUILD_DIR) -> list[str]:
    """The application's own artifacts under `folder`, at their object keys; returns the keys."""
    from eo.runtime.submit import build_pyfiles

    shutil.rmtree(folder / "entrypoints", ignore_errors=True)
    pyfiles = artifact_key("pyfiles", "eo-jobs.zip")
    build_pyfiles(folder / pyfiles)
    _zip(folder / CONF_KEY, {f"conf/{t.name}": t for t in config_file().parent.glob("*.toml")})
    for script in ENTRY_POINTS:
        target = folder / artifact_key("entrypoints", script)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO_ROOT / script, target)
    return [pyfiles, CONF_KEY, *(artifact_key("entrypoints", s) for s in ENTRY_POINTS)]


def outputs_archive(outputs: dict, target: Path) -> Path:
    """The outputs as one flat JSON map in a zip: what Terraform uploads as OUTPUTS_KEY."""
    return _zip(target, {OUTPUTS_MEMBER: json.dumps(outputs, indent=2, sort_keys=True).encode()})


def application_conf(settings: Settings, bucket: str, python: str = JOB_PYTHON) -> dict[str, str]:
    """The job driver's settings for the application's own files: where its code, configuration and
    outputs are, which environment it is, and which Python runs it, on the driver and the executors."""
    conf = {
        "spark.submit.pyFiles": f"s3://{bucket}/{artifact_key('pyfiles', 'eo-jobs.zip')}",
        "spark.archives": f"s3://{bucket}/{CONF_KEY}#{HOME_ALIAS},s3://{bucket}/{OUTPUTS_KEY}#{OUTPUTS_ALIAS}",
        "spark.emr-serverless.driverEnv.PYSPARK_DRIVER_PYTHON": python,
    }
    variables = {
        "EO_ENV": settings.env,
        "EO_HOME": HOME_ALIAS,
        "EO_TF_OUTPUTS": f"{OUTPUTS_ALIAS}/{OUTPUTS_MEMBER}",
        "PYSPARK_PYTHON": python,
    }
    for prefix in ("spark.emr-serverless.driverEnv.", "spark.executorEnv."):
        conf |= {prefix + name: value for name, value in variables.items()}
    return conf
