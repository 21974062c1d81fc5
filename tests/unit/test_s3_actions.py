"""What the jobs' file operations do on S3 is what the Spark role allows: every S3 call of
ObjectStoreFiles, each method exercised on moto's versioned bucket, maps to IAM actions that are
all in the role's lists (eo/cloud/outputs.py, kept equal to terraform/modules/iam by
tests/infra/test_terraform.py). The operations are recorded as moto serves them; the policies
themselves are enforced by moto in tests/infra/test_iam_actions.py."""

from __future__ import annotations

import pytest

from eo.cloud.iam_actions import operation_actions
from eo.cloud.outputs import SPARK_S3_BUCKET_ACTIONS, SPARK_S3_OBJECT_ACTIONS
from eo.cloud.s3 import ObjectStoreFiles
from eo.runtime.storage import Files

pytestmark = pytest.mark.unit

BUCKET = "eo-lake"


def actions_of(operation: str, params: dict) -> set[str]:
    """The IAM actions an S3 API operation needs: eo/cloud/iam_actions.py's table (the one
    tests/infra/test_iam_actions.py checks the code's calls and Terraform's policies with); an
    operation not in it fails the test until it is."""
    try:
        return set(operation_actions("s3", operation, params))
    except KeyError:
        raise AssertionError(
            f"S3 {operation}: add the IAM actions it needs to eo/cloud/iam_actions.py OPERATIONS"
        ) from None


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
