"""What a job run needs besides its release: the job code, the entry points, the configuration and
the environment's Terraform outputs, as objects of the artifacts bucket.

    build/artifacts/pyfiles/eo-jobs-<digest>.zip              the packages eo, streaming, batch, ops
    build/artifacts/home/eo-conf-<digest>.zip                 conf/*.toml
    build/artifacts/entrypoints/<digest>/<script>             jobs/stream.py, jobs/rebuild.py, ...
    build/artifacts/manifests/application.json                which of those keys are current
    home/eo-outputs.zip                                       terraform-outputs.json: written by Terraform itself

Code, configuration and entry points are named by their content (`content_key`: the first 16 hex
digits of the file's SHA-256): an upload never replaces an object a job run names, so a running
stream's executors, added or replaced at any time, fetch the code its driver started with until the
stream restarts. The manifest, at a fixed key, names the current ones: the job driver reads it
(eo/cloud/emr_serverless.py `uploaded_application`, as it reads the jars' manifest) and names its
keys; an object the manifest no longer names is tagged superseded by the upload and expired by the
bucket's lifecycle rule (terraform/modules/storage), never deleted by the upload.

`make artifacts` builds the folder (with the release's jars, eo/cloud/emr_serverless.py) and
`terraform apply` uploads it. The job driver passes both zips with `spark.archives`: EMR unpacks
them into the working folder of the driver and of every executor (`eo_home/`, `eo_outputs/`), and
`EO_HOME` and `EO_TF_OUTPUTS` tell the job where they are. Nothing else reaches a job run:
`make cloud-smoke` runs the same files in an empty folder with only what the job driver passes.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path

from eo.core.sources import SELECTED, SOURCE_VARIABLE
from eo.runtime.cli import NotReady
from eo.runtime.config import REPO_ROOT, Settings, config_file

# The scripts job runs name (jobs/): each calls one entry point of the packages in the zip.
ENTRY_POINTS = ("jobs/stream.py", "jobs/rebuild.py", "jobs/verify.py", "jobs/maintenance.py", "jobs/reset.py")
BUILD_DIR = REPO_ROOT / "build" / "artifacts"
# The keys of the code and the configuration before their content names them (content_key).
PYFILES_ZIP, CONF_ZIP = "pyfiles/eo-jobs.zip", "home/eo-conf.zip"
# Which content-addressed keys are current: written by build_application, uploaded last, at a fixed key.
APPLICATION_MANIFEST = "manifests/application.json"
OUTPUTS_KEY = "home/eo-outputs.zip"  # Terraform's archive_file makes the same (terraform/platform/main.tf)
OUTPUTS_MEMBER = "terraform-outputs.json"
HOME_ALIAS, OUTPUTS_ALIAS = "eo_home", "eo_outputs"  # the folders the runtime unpacks them into
# Where the job's Python is in the job image (eo/cloud/job_image.py): the release's own python3 is
# older than the code's 3.11.
JOB_PYTHON = "/usr/bin/python3.11"


def artifact_key(kind: str, path: Path | str) -> str:
    """The object key of a jar, jars/<name>: its name carries its version, so it never changes content."""
    return f"{kind}/{Path(path).name}"


class MissingArtifacts(NotReady):
    """The artifacts bucket holds no application, or not the entry point a job names."""


def content_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def content_key(key: str, data: bytes) -> str:
    """`key` named by `data`: pyfiles/eo-jobs.zip -> pyfiles/eo-jobs-<digest>.zip, and an entry point
    entrypoints/jobs/stream.py -> entrypoints/<digest>/jobs/stream.py (its file name kept: EMR runs
    the file under that name). Same bytes, same key; another byte, another key."""
    digest = content_digest(data)
    if key.startswith("entrypoints/"):
        return f"entrypoints/{digest}/{key.removeprefix('entrypoints/')}"
    path = Path(key)
    return str(path.with_name(f"{path.stem}-{digest}{path.suffix}"))


@dataclass(frozen=True)
class Application:
    """The current keys of the application's code (`pyfiles`), configuration (`conf`) and entry
    points (script -> key): what APPLICATION_MANIFEST holds."""

    pyfiles: str
    conf: str
    entrypoints: dict[str, str]

    def keys(self) -> list[str]:
        return [self.pyfiles, self.conf, *self.entrypoints.values()]

    def entry_point(self, script: str) -> str:
        if script not in self.entrypoints:
            raise MissingArtifacts(
                f"{script} is not among the uploaded entry points ({', '.join(sorted(self.entrypoints))}): "
                "run `make artifacts` and `terraform apply`"
            )
        return self.entrypoints[script]

    def to_json(self) -> str:
        return json.dumps({"pyfiles": self.pyfiles, "conf": self.conf, "entrypoints": self.entrypoints}, indent=2)

    @classmethod
    def from_json(cls, text: str | bytes) -> Application:
        found = json.loads(text)
        return cls(found["pyfiles"], found["conf"], dict(found["entrypoints"]))


_FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # no build time in a zip: same files, same bytes, same key


def _zip(target: Path, members: dict[str, Path | bytes]) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, source in sorted(members.items()):
            info = zipfile.ZipInfo(name, _FIXED_TIME)
            info.compress_type, info.external_attr = zipfile.ZIP_DEFLATED, 0o644 << 16
            archive.writestr(info, source if isinstance(source, bytes) else source.read_bytes())
    tmp.replace(target)
    return target


def _place(folder: Path, key: str, built: Path) -> str:
    """Move a built file to its content key under `folder`; returns the key."""
    named = content_key(key, built.read_bytes())
    (folder / named).parent.mkdir(parents=True, exist_ok=True)
    built.replace(folder / named)
    return named


def build_application(folder: Path = BUILD_DIR) -> list[str]:
    """The application's own artifacts under `folder`, at their content keys, and the manifest that
    names them; returns the keys, the manifest last. Files of earlier builds are removed from the
    folder (never from the bucket: eo/cloud/emr_serverless.py `publish`)."""
    from eo.runtime.submit import build_pyfiles

    for kind in ("pyfiles", "home", "entrypoints", Path(APPLICATION_MANIFEST).parent.name):
        shutil.rmtree(folder / kind, ignore_errors=True)
    staging = folder / ".staging"
    shutil.rmtree(staging, ignore_errors=True)
    pyfiles = _place(folder, PYFILES_ZIP, build_pyfiles(staging / PYFILES_ZIP))
    toml = {f"conf/{t.name}": t for t in config_file().parent.glob("*.toml")}
    conf = _place(folder, CONF_ZIP, _zip(staging / CONF_ZIP, toml))
    entrypoints = {}
    for script in ENTRY_POINTS:
        key = content_key(f"entrypoints/{script}", (REPO_ROOT / script).read_bytes())
        (folder / key).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO_ROOT / script, folder / key)
        entrypoints[script] = key
    shutil.rmtree(staging)
    application = Application(pyfiles, conf, entrypoints)
    (folder / APPLICATION_MANIFEST).parent.mkdir(parents=True, exist_ok=True)
    (folder / APPLICATION_MANIFEST).write_text(application.to_json())
    return [*application.keys(), APPLICATION_MANIFEST]


def built_application(folder: Path = BUILD_DIR) -> Application:
    """The application `make artifacts` last built in `folder` (its manifest)."""
    return Application.from_json((folder / APPLICATION_MANIFEST).read_text())


def outputs_archive(outputs: dict, target: Path) -> Path:
    """The outputs as one flat JSON map in a zip: what Terraform uploads as OUTPUTS_KEY."""
    return _zip(target, {OUTPUTS_MEMBER: json.dumps(outputs, indent=2, sort_keys=True).encode()})


def application_conf(
    settings: Settings, bucket: str, application: Application, python: str = JOB_PYTHON, source: str = SELECTED.name
) -> dict[str, str]:
    """The job driver's settings for the application's own files: where its code, configuration
    (the keys `application` names) and outputs are, which environment it is, which source it
    serves (the caller's by default), and which Python runs it, on the driver and the executors."""
    conf = {
        "spark.submit.pyFiles": f"s3://{bucket}/{application.pyfiles}",
        "spark.archives": f"s3://{bucket}/{application.conf}#{HOME_ALIAS},s3://{bucket}/{OUTPUTS_KEY}#{OUTPUTS_ALIAS}",
        "spark.emr-serverless.driverEnv.PYSPARK_DRIVER_PYTHON": python,
    }
    variables = {
        "EO_ENV": settings.env,
        SOURCE_VARIABLE: source,
        "EO_HOME": HOME_ALIAS,
        "EO_TF_OUTPUTS": f"{OUTPUTS_ALIAS}/{OUTPUTS_MEMBER}",
        "PYSPARK_PYTHON": python,
    }
    for prefix in ("spark.emr-serverless.driverEnv.", "spark.executorEnv."):
        conf |= {prefix + name: value for name, value in variables.items()}
    return conf
