"""What the artifacts bucket holds for job runs, and how it gets there: the jars resolved for the
EMR release and their manifest, the application's code, configuration and entry points (named by
their content, eo/cloud/artifacts.py) and theirs. `build` makes them under build/artifacts,
`publish` uploads them without ever replacing or deleting an object (what `terraform apply` runs),
and `uploaded_jars` / `uploaded_application` read the manifests job drivers name keys from
(eo/cloud/emr_serverless.py), on MWAA too."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from eo.cloud.artifacts import (
    APPLICATION_MANIFEST,
    BUILD_DIR,
    Application,
    MissingArtifacts,
    artifact_key,
    build_application,
)
from eo.runtime.config import REPO_ROOT

EMR_JARS_DIR = REPO_ROOT / ".cache" / "jars" / "emr"
# Which jars the last upload put in the artifacts bucket, for which release: what job drivers name,
# wherever they are built (on MWAA there is no .cache/jars).
JAR_MANIFEST = "jars/manifest.json"
# Uploaded after everything they name: a job driver never names a missing object.
MANIFESTS = (APPLICATION_MANIFEST, JAR_MANIFEST)
# An object no manifest names any more carries this tag from the upload that stopped naming it; the
# artifacts bucket's lifecycle rule expires it some days later (terraform/modules/storage).
SUPERSEDED_TAG = ("eo-artifact", "superseded")
# The fixed keys of the application before its keys were named by content: superseded by the first
# upload of a manifest, like any key it does not name.
LEGACY_KEYS = (
    "pyfiles/eo-jobs.zip",
    "home/eo-conf.zip",
    "entrypoints/streaming/run.py",
    "entrypoints/batch/rebuild.py",
    "entrypoints/batch/verify.py",
    "entrypoints/batch/maintenance.py",
    "entrypoints/ops/reset.py",
)


def check_jar_names(runtime, names: set[str], where: str) -> None:
    """Exactly one jar of each artifact the release needs, in its version: none missing, none left over."""
    from eo.cloud.outputs import RuntimeMismatch

    for artifact, name in runtime.jar_names().items():
        present = sorted(f for f in names if f.startswith(artifact))
        if present != [name]:
            raise RuntimeMismatch(
                f"{where} has {present or 'no ' + artifact} where {runtime.release_label} needs {name}: "
                "run `make jars-emr` and upload again"
            )


def emr_jar_paths(runtime=None, jars_dir: Path | None = None) -> list[str]:
    """The jars `make jars-emr` resolved, refused when they are not the ones infra/maven/emr/pom.xml names."""
    from eo.cloud.outputs import emr_runtime
    from eo.runtime.jars import MissingJarsError

    runtime = runtime or emr_runtime()
    jars_dir = jars_dir or EMR_JARS_DIR
    jars = sorted(jars_dir.glob("*.jar"))
    if not jars:
        raise MissingJarsError(f"no jars in {jars_dir}; run `make jars-emr`")
    check_jar_names(runtime, {p.name for p in jars}, str(jars_dir))
    return [str(p) for p in jars]


def uploaded_jars(runtime, bucket: str, s3) -> list[str]:
    """File names of the jars the last upload put under s3://<bucket>/jars/, refused when not the release's.
    Its own read of the manifest: the Airflow role makes it (eo/cloud/iam_actions.py names call sites)."""
    from botocore.exceptions import ClientError

    from eo.cloud.outputs import RuntimeMismatch
    from eo.runtime.jars import MissingJarsError

    try:
        manifest = json.loads(s3.get_object(Bucket=bucket, Key=JAR_MANIFEST)["Body"].read())
    except ClientError as error:
        if not _missing(error):
            raise
        raise MissingJarsError(
            f"no jars uploaded to s3://{bucket}/; run `python -m eo.cloud.emr_serverless upload`"
        ) from None
    if manifest["release_label"] != runtime.release_label:
        raise RuntimeMismatch(
            f"s3://{bucket}/ holds jars for {manifest['release_label']}, not {runtime.release_label}: upload again"
        )
    check_jar_names(runtime, set(manifest["jars"]), f"s3://{bucket}/jars/")
    return list(manifest["jars"])


def _missing(error) -> bool:
    return error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound")


def uploaded_application(bucket: str, s3) -> Application:
    """The keys of the code, configuration and entry points the last upload made current (its manifest)."""
    from botocore.exceptions import ClientError

    try:
        return Application.from_json(s3.get_object(Bucket=bucket, Key=APPLICATION_MANIFEST)["Body"].read())
    except ClientError as error:
        if not _missing(error):
            raise
        raise MissingArtifacts(
            f"no application uploaded to s3://{bucket}/ ({APPLICATION_MANIFEST}): run `make artifacts` and "
            "`terraform apply` (or `python -m eo.cloud.emr_serverless upload`)"
        ) from None


def _read_manifest(s3, bucket: str, key: str) -> bytes | None:
    """The object's bytes; None when there is no such object."""
    from botocore.exceptions import ClientError

    try:
        return s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    except ClientError as error:
        if not _missing(error):
            raise
        return None


def build(folder: Path = BUILD_DIR) -> list[str]:
    """`make artifacts`: the jars resolved for the application's release, their manifest and the
    application's own artifacts (eo/cloud/artifacts.py) under `folder`, at their object keys;
    `terraform apply` uploads them. Returns the keys, the manifest last."""
    from eo.cloud.outputs import emr_runtime

    runtime = emr_runtime()
    jars = [Path(j) for j in emr_jar_paths(runtime)]
    shutil.rmtree(folder / "jars", ignore_errors=True)
    (folder / "jars").mkdir(parents=True)
    for jar in jars:
        shutil.copyfile(jar, folder / artifact_key("jars", jar))
    keys = [artifact_key("jars", j) for j in jars] + build_application(folder)
    # Which jars, for which release: what job drivers name, wherever they are built (on MWAA too).
    manifest = {"release_label": runtime.release_label, "jars": [j.name for j in jars]}
    (folder / JAR_MANIFEST).write_text(json.dumps(manifest))
    return [*keys, JAR_MANIFEST]


def _object_tags(s3, bucket: str, key: str) -> dict[str, str] | None:
    """The tags of an object of the bucket; None when there is no such object."""
    from botocore.exceptions import ClientError

    try:
        return {t["Key"]: t["Value"] for t in s3.get_object_tagging(Bucket=bucket, Key=key)["TagSet"]}
    except ClientError as error:
        if not _missing(error):
            raise
        return None


def _mark(s3, bucket: str, key: str, superseded: bool) -> None:
    """Copy the object onto itself, tagged superseded (or no longer): the copy's creation date, from
    which the lifecycle rule counts its days, is the moment it stopped (or started again) being current."""
    name, value = SUPERSEDED_TAG
    s3.copy_object(
        Bucket=bucket,
        Key=key,
        CopySource={"Bucket": bucket, "Key": key},
        MetadataDirective="REPLACE",
        Metadata={name: value if superseded else "current"},
        TaggingDirective="REPLACE",
        **({"Tagging": f"{name}={value}"} if superseded else {}),
    )


def _named_by_uploaded_manifests(s3, bucket: str) -> set[str]:
    """The keys the bucket's manifests name now: the application's (the legacy fixed keys before
    there was one) and the jars."""
    application = _read_manifest(s3, bucket, APPLICATION_MANIFEST)
    named = set(Application.from_json(application).keys()) if application else set(LEGACY_KEYS)
    jars = _read_manifest(s3, bucket, JAR_MANIFEST)
    if jars:
        named |= {artifact_key("jars", name) for name in json.loads(jars)["jars"]}
    return named


def publish(folder: Path, bucket: str, s3, log: Callable[[str], None] = print, manifests: bool = True) -> list[str]:
    """Put the built artifacts of `folder` in the bucket, never replacing or deleting an object:
    what is not there yet is uploaded, a key that was superseded and is current again loses its tag,
    and what the bucket's manifests named but this build does not is tagged superseded (a job run
    started before keeps reading it until the lifecycle rule expires it). With `manifests`, the
    manifests of `folder` last: from then on job drivers name the new keys (`terraform apply`
    uploads them itself, after this). Returns the keys of `folder`, the manifests last."""
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    files = [k for k in files if k not in MANIFESTS and not k.startswith(".")]
    before = _named_by_uploaded_manifests(s3, bucket)
    uploaded = 0
    name, value = SUPERSEDED_TAG
    for key in files:
        tags = _object_tags(s3, bucket, key)
        if tags is None:
            s3.upload_file(str(folder / key), bucket, key)
            uploaded += 1
        elif tags.get(name) == value:
            _mark(s3, bucket, key, superseded=False)
    superseded = []
    for key in sorted(before - set(files)):
        tags = _object_tags(s3, bucket, key)
        if tags is not None and tags.get(name) != value:  # gone, or superseded by an earlier upload
            _mark(s3, bucket, key, superseded=True)
            superseded.append(key)
    shipped = [k for k in MANIFESTS if manifests and (folder / k).is_file()]
    for key in shipped:
        s3.upload_file(str(folder / key), bucket, key)
    log(
        f"s3://{bucket}/: {uploaded} of {len(files)} artifacts uploaded (the others were there), "
        f"{len(superseded)} superseded, {len(shipped)} manifests"
    )
    return [*files, *shipped]
