"""Content-addressed job artifacts on (moto's) S3 (eo/cloud/artifact_store.py publish): an upload
never replaces or deletes an object a job run may name; what the manifests stop naming is tagged
superseded for the bucket's lifecycle rule, and what is named again loses the tag."""

from __future__ import annotations

import json

import pytest

from eo.cloud import artifact_store, artifacts, emr_serverless
from eo.cloud.artifacts import APPLICATION_MANIFEST, Application
from eo.runtime.config import REPO_ROOT

pytestmark = pytest.mark.unit

BUCKET, REGION = "eo-artifacts", "eu-west-1"


@pytest.fixture
def s3(monkeypatch):
    import boto3
    from moto import mock_aws

    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    with mock_aws():
        client = boto3.client("s3", region_name=REGION)
        client.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
        client.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
        yield client


def build(folder, monkeypatch, extra: bytes = b"") -> Application:
    """The application with conf/platform.toml one byte sequence longer (another configuration)."""
    conf = folder.parent / f"conf-{len(extra)}"
    conf.mkdir(exist_ok=True)
    for toml in (REPO_ROOT / "conf").glob("*.toml"):
        (conf / toml.name).write_bytes(toml.read_bytes() + (extra if toml.name == "platform.toml" else b""))
    monkeypatch.setattr(artifacts, "config_file", lambda: conf / "platform.toml")
    artifacts.build_application(folder)
    return artifacts.built_application(folder)


def tags(s3, key: str) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in s3.get_object_tagging(Bucket=BUCKET, Key=key)["TagSet"]}


def stored(s3) -> set[str]:
    return {o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])}


def test_an_upload_keeps_what_a_running_job_names_and_supersedes_it(s3, tmp_path, monkeypatch):
    folder = tmp_path / "artifacts"
    first = build(folder, monkeypatch)
    keys = artifact_store.publish(folder, BUCKET, s3, log=lambda _: None)
    assert keys == [*sorted(first.keys()), APPLICATION_MANIFEST]
    assert artifact_store.uploaded_application(BUCKET, s3) == first
    assert all(tags(s3, k) == {} for k in first.keys())

    second = build(folder, monkeypatch, extra=b"\n")  # a new configuration, the same code
    assert second.conf != first.conf and second.pyfiles == first.pyfiles
    artifact_store.publish(folder, BUCKET, s3, log=lambda _: None)
    assert artifact_store.uploaded_application(BUCKET, s3) == second
    # The first configuration is still there for the run that names it, tagged for the lifecycle rule.
    assert {first.conf, *second.keys()} <= stored(s3)
    assert tags(s3, first.conf) == {"eo-artifact": "superseded"}
    assert all(tags(s3, k) == {} for k in second.keys())
    versions = s3.list_object_versions(Bucket=BUCKET, Prefix=first.conf)["Versions"]
    assert len(versions) == 2  # the tagged copy and the original, now noncurrent: the same bytes
    body = s3.get_object(Bucket=BUCKET, Key=first.conf)["Body"].read()
    assert artifacts.content_key(artifacts.CONF_ZIP, body) == first.conf  # still the bytes its key names

    build(folder, monkeypatch)  # back to the first configuration: its key is current again
    artifact_store.publish(folder, BUCKET, s3, log=lambda _: None)
    assert artifact_store.uploaded_application(BUCKET, s3) == first
    assert tags(s3, first.conf) == {} and tags(s3, second.conf) == {"eo-artifact": "superseded"}


def test_without_manifests_the_objects_go_first_and_the_manifest_stays(s3, tmp_path, monkeypatch):
    """As terraform apply runs it: the objects, then Terraform uploads the manifests itself."""
    folder = tmp_path / "artifacts"
    application = build(folder, monkeypatch)
    keys = artifact_store.publish(folder, BUCKET, s3, log=lambda _: None, manifests=False)
    assert set(keys) == set(application.keys()) == stored(s3)


def test_the_first_manifest_supersedes_the_fixed_keys_of_before(s3, tmp_path, monkeypatch):
    for key in artifact_store.LEGACY_KEYS:
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"old")
    s3.put_object(Bucket=BUCKET, Key="jars/old-1.0.jar", Body=b"jar")
    s3.put_object(Bucket=BUCKET, Key="jars/manifest.json", Body=json.dumps({"jars": ["old-1.0.jar"]}).encode())
    folder = tmp_path / "artifacts"
    build(folder, monkeypatch)
    artifact_store.publish(folder, BUCKET, s3, log=lambda _: None)
    for key in [*artifact_store.LEGACY_KEYS, "jars/old-1.0.jar"]:
        assert tags(s3, key) == {"eo-artifact": "superseded"}
        assert s3.get_object(Bucket=BUCKET, Key=key)["Body"].read() in (b"old", b"jar")


def test_terraform_apply_runs_the_publish_command_without_settings(s3, tmp_path, monkeypatch):
    """`python -m eo.cloud.emr_serverless publish --bucket B --region R` (terraform_data.job_artifacts):
    before the first apply there are no outputs to load settings from."""
    folder = tmp_path / "artifacts"
    application = build(folder, monkeypatch)
    monkeypatch.setattr(emr_serverless, "BUILD_DIR", folder)
    monkeypatch.setattr(emr_serverless, "load_settings", lambda: pytest.fail("publish loads no settings"))
    assert emr_serverless.main(["publish", "--bucket", BUCKET, "--region", REGION]) == 0
    assert stored(s3) == set(application.keys())  # the manifest is Terraform's to upload, after
