"""What the jobs' file operations do on S3 is what the Spark role allows: every S3 call of
ObjectStoreFiles, each method exercised on moto's versioned bucket, maps to IAM actions that are
all in the role's lists (eo/cloud/outputs.py, kept equal to terraform/modules/iam by
tests/infra/test_terraform.py). moto enforces no IAM: this test is where a denial shows first."""

from __future__ import annotations

import pytest

from eo.cloud.outputs import SPARK_S3_BUCKET_ACTIONS, SPARK_S3_OBJECT_ACTIONS
from eo.cloud.s3 import ObjectStoreFiles
from eo.runtime.storage import Files

pytestmark = pytest.mark.unit

BUCKET = "eo-lake"


def actions_of(operation: str, params: dict) -> set[str]:
    """The IAM actions an S3 API operation needs (the Service Authorization Reference's table);
    an operation not listed here fails the test until it is."""
    versioned = "VersionId" in params or any("VersionId" in o for o in params.get("Delete", {}).get("Objects", []))
    table = {
        "ListObjectsV2": {"s3:ListBucket"},
        "ListObjects": {"s3:ListBucket"},
        "ListObjectVersions": {"s3:ListBucketVersions"},
        "GetObject": {"s3:GetObjectVersion" if versioned else "s3:GetObject"},
        "HeadObject": {"s3:GetObjectVersion" if versioned else "s3:GetObject"},
        "PutObject": {"s3:PutObject"},
        "CreateMultipartUpload": {"s3:PutObject"},
        "UploadPart": {"s3:PutObject"},
        "CompleteMultipartUpload": {"s3:PutObject"},
        "AbortMultipartUpload": {"s3:AbortMultipartUpload"},
        "DeleteObject": {"s3:DeleteObjectVersion" if versioned else "s3:DeleteObject"},
        "DeleteObjects": {"s3:DeleteObjectVersion" if versioned else "s3:DeleteObject"},
    }
    assert operation in table, f"S3 {operation}: add the IAM actions it needs to this table"
    return table[operation]


@pytest.fixture
def s3(tmp_path):
    import boto3
    from moto import mock_aws

    with mock_aws():
        client = boto3.client("s3", region_name="eu-west-1")
        client.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        client.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
        yield client


def test_every_file_operation_is_allowed_to_the_spark_role_and_deletes_keep_versions(s3, tmp_path):
    called: list[tuple[str, set[str]]] = []

    def record(params, model, **_):
        called.append((model.name, actions_of(model.name, params)))

    s3.meta.events.register("before-parameter-build.s3", record)
    files = ObjectStoreFiles(s3)
    # Every method of the Files protocol is exercised below.
    assert {m for m in vars(Files) if not m.startswith("_")} <= set(dir(files))
    root = f"s3a://{BUCKET}/reports"
    (tmp_path / "docs" / "validations").mkdir(parents=True)
    (tmp_path / "docs" / "index.html").write_text("<html/>")
    (tmp_path / "docs" / "validations" / "one.html").write_text("<p/>")

    files.make_folder(f"{root}/docs")
    files.put_tree(tmp_path / "docs", f"{root}/docs")
    files.put_tree(tmp_path / "docs", f"{root}/docs")  # a second publish replaces the first
    files.write_text(f"{root}/verdict.json", "{}")
    assert files.read_text(f"{root}/verdict.json") == "{}" and files.read_bytes(f"{root}/verdict.json") == b"{}"
    assert files.exists(f"{root}/verdict.json") and files.modified(f"{root}/verdict.json") > 0
    assert files.names(root) == ["docs", "verdict.json"]
    files.delete_file(f"{root}/verdict.json")
    files.delete_tree(f"{root}/docs")
    # (moto still lists a folder whose objects all have delete markers as a common prefix; S3 does not)
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix="reports/")["KeyCount"] == 0
    assert not files.exists(f"{root}/docs/index.html")

    needed = set().union(*(actions for _, actions in called))
    allowed = SPARK_S3_OBJECT_ACTIONS | SPARK_S3_BUCKET_ACTIONS
    assert needed - allowed == set(), [op for op, actions in called if actions - allowed]
    assert {op for op, _ in called} >= {"ListObjectsV2", "DeleteObjects", "PutObject", "GetObject", "HeadObject"}
    # Deleted, not destroyed: every version is still there for the lifecycle to expire.
    versions = s3.list_object_versions(Bucket=BUCKET, Prefix="reports/")
    kept = {v["Key"] for v in versions.get("Versions", [])}
    assert kept == {"reports/docs/index.html", "reports/docs/validations/one.html", "reports/verdict.json"}
    assert {m["Key"] for m in versions.get("DeleteMarkers", []) if m["IsLatest"]} == kept


def test_the_table_names_a_permanent_delete_for_what_it_is():
    assert actions_of("DeleteObjects", {"Delete": {"Objects": [{"Key": "k", "VersionId": "v"}]}}) == {
        "s3:DeleteObjectVersion"
    }
    with pytest.raises(AssertionError, match="SelectObjectContent"):
        actions_of("SelectObjectContent", {})
