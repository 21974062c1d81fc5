"""The aws environment's jars are the ones resolved for its EMR release (infra/maven/emr/pom.xml): the
pom's versions agree with what the release ships, and the upload and the job driver refuse jars or an
application release that disagree, instead of failing at the first job run."""

import dataclasses
import io
import json
import re

import pytest
from botocore.exceptions import ClientError

from eo.cloud import artifact_store, emr_serverless
from eo.cloud.artifacts import Application, MissingArtifacts
from eo.cloud.outputs import RuntimeMismatch, emr_runtime
from eo.runtime.config import load_settings
from eo.runtime.jars import MissingJarsError

pytestmark = pytest.mark.unit

OTHERS = ["kafka-clients-3.9.1.jar", "commons-pool2-2.12.1.jar", "delta-kernel-api-4.2.0.jar"]


def jars(folder, names):
    folder.mkdir(exist_ok=True)
    for name in names:
        (folder / name).write_bytes(b"")
    return folder


class Bucket:
    """An S3 client holding one bucket in memory: what upload and job_driver call."""

    def __init__(self):
        self.objects: dict[str, bytes] = {}

    def upload_file(self, filename, bucket, key):
        with open(filename, "rb") as fh:
            self.objects[key] = fh.read()

    def put_object(self, Bucket, Key, Body):  # boto3's argument names
        self.objects[Key] = Body

    def get_object(self, Bucket, Key):
        if Key not in self.objects:
            raise ClientError({"Error": {"Code": "NoSuchKey"}}, "GetObject")
        return {"Body": io.BytesIO(self.objects[Key])}

    def get_object_tagging(self, Bucket, Key):  # what publish asks of each key
        if Key not in self.objects:
            raise ClientError({"Error": {"Code": "NoSuchKey"}}, "GetObjectTagging")
        return {"TagSet": []}


@pytest.fixture
def runtime():
    return emr_runtime()


@pytest.fixture
def outputs(runtime):
    return {"artifacts_bucket": "b", "region": "eu-west-1", "emr_release_label": runtime.release_label}


def test_the_pom_resolves_upstream_versions_of_what_the_release_ships(runtime):
    assert runtime.release_label.startswith("emr-spark-")
    assert runtime.emr_spark_version.split("-")[0] == runtime.spark_version
    assert runtime.emr_delta_version.split("-")[0] == runtime.delta_version
    names = runtime.jar_names()
    assert names["delta-spark"] == f"delta-spark_{runtime.spark_binary_version}_2.13-{runtime.delta_version}.jar"
    assert names["spark-sql-kafka"] == f"spark-sql-kafka-0-10_2.13-{runtime.spark_version}.jar"


@pytest.mark.parametrize(
    "change, message",
    [
        ({"spark_version": "4.2.0", "spark_binary_version": "4.2"}, "ships Spark 4.1.3-amzn-0, the jars are for 4.2.0"),
        ({"delta_version": "4.4.0"}, "ships Delta 4.2.0-amzn-0, the jars are for 4.4.0"),
        ({"spark_binary_version": "4.2"}, "is not Spark 4.2"),
    ],
)
def test_a_pom_whose_versions_drift_from_the_release_is_refused(runtime, change, message):
    with pytest.raises(RuntimeMismatch, match=re.escape(message)):
        dataclasses.replace(runtime, **change).check()


def test_exactly_the_resolved_jars_pass(runtime, tmp_path):
    folder = jars(tmp_path / "emr", [*runtime.jar_names().values(), *OTHERS])
    assert len(artifact_store.emr_jar_paths(runtime, folder)) == 5 + len(OTHERS)


def test_jars_for_the_local_spark_are_refused(runtime, tmp_path):
    local = ["delta-spark_4.2_2.13-4.4.0.jar", "delta-storage-4.4.0.jar", "spark-sql-kafka-0-10_2.13-4.2.0.jar"]
    folder = jars(tmp_path / "emr", [*local, "aws-msk-iam-auth-2.3.5.jar"])
    with pytest.raises(RuntimeMismatch, match=r"delta-spark_4\.2_2\.13-4\.4\.0\.jar.*needs delta-spark_4\.1"):
        artifact_store.emr_jar_paths(runtime, folder)


def test_a_leftover_of_another_resolution_is_refused(runtime, tmp_path):
    folder = jars(tmp_path / "emr", [*runtime.jar_names().values(), "spark-sql-kafka-0-10_2.13-4.0.2.jar"])
    with pytest.raises(RuntimeMismatch, match=re.escape("spark-sql-kafka-0-10_2.13-4.0.2.jar")):
        artifact_store.emr_jar_paths(runtime, folder)


def test_no_jars_asks_for_make_jars_emr(runtime, tmp_path):
    with pytest.raises(MissingJarsError, match="make jars-emr"):
        artifact_store.emr_jar_paths(runtime, jars(tmp_path / "emr", []))


def test_an_application_on_another_release_is_refused(runtime):
    emr_serverless.check_release(runtime, {"emr_release_label": runtime.release_label})
    with pytest.raises(RuntimeMismatch, match=re.escape("runs emr-spark-8.0.0 but the jars are for")):
        emr_serverless.check_release(runtime, {"emr_release_label": "emr-spark-8.0.0"})


def test_upload_records_the_jars_the_job_driver_names_with_the_log_store_and_the_delta_package(
    runtime, outputs, tmp_path, monkeypatch
):
    monkeypatch.setattr(
        artifact_store, "EMR_JARS_DIR", jars(tmp_path / "emr", [*runtime.jar_names().values(), *OTHERS])
    )
    monkeypatch.setattr(emr_serverless, "terraform_outputs", lambda settings: outputs)
    settings, s3 = load_settings("local"), Bucket()  # only the environment's name reaches the driver
    keys = emr_serverless.upload(settings, s3, log=lambda _: None, folder=tmp_path / "build" / "artifacts")
    assert set(keys) == set(s3.objects) and keys[-2:] == ["manifests/application.json", "jars/manifest.json"]
    application = Application.from_json(s3.objects["manifests/application.json"])
    assert {"home/eo-outputs.zip", *application.keys()} <= set(keys)
    assert application.entry_point("jobs/reset.py").endswith("/jobs/reset.py")
    manifest = json.loads(s3.objects["jars/manifest.json"])
    assert manifest["release_label"] == runtime.release_label and len(manifest["jars"]) == 5 + len(OTHERS)

    driver = emr_serverless.job_driver(settings, "jobs/stream.py", ["run"], outputs=outputs, s3=s3)["sparkSubmit"]
    conf = driver["sparkSubmitParameters"].split("--conf ")
    params = dict(p.strip().split("=", 1) for p in conf if p.strip())
    spark_jars = params["spark.jars"].split(",")
    assert spark_jars[-1] == runtime.log_store_jar == "/usr/share/aws/delta/lib/delta-storage-s3-dynamodb.jar"
    assert set(spark_jars[:-1]) == {f"s3://b/jars/{n}" for n in manifest["jars"]}
    assert {j.removeprefix("s3://b/") for j in spark_jars[:-1]} <= set(s3.objects)
    # The code, configuration and entry point the manifest names: the keys of their content.
    assert driver["entryPoint"] == f"s3://b/{application.entry_point('jobs/stream.py')}"
    assert params["spark.submit.pyFiles"].split(",") == [
        f"s3://b/{application.pyfiles}",
        f"s3://b/jars/{runtime.jar_names()['delta-spark']}",
    ]
    # The job's configuration and outputs travel as archives the runtime unpacks beside it.
    assert params["spark.archives"] == f"s3://b/{application.conf}#eo_home,s3://b/home/eo-outputs.zip#eo_outputs"
    assert params["spark.emr-serverless.driverEnv.EO_HOME"] == params["spark.executorEnv.EO_HOME"] == "eo_home"
    assert params["spark.emr-serverless.driverEnv.PYSPARK_PYTHON"] == "/usr/bin/python3.11"


def test_the_job_driver_refuses_missing_or_foreign_uploads(runtime, outputs):
    s3, settings = Bucket(), load_settings("local")
    with pytest.raises(MissingJarsError, match="emr_serverless upload"):
        emr_serverless.job_driver(settings, "jobs/verify.py", [], outputs=outputs, s3=s3)
    s3.objects["jars/manifest.json"] = json.dumps({"release_label": "emr-spark-8.0.0", "jars": []}).encode()
    with pytest.raises(RuntimeMismatch, match=re.escape("holds jars for emr-spark-8.0.0")):
        emr_serverless.job_driver(settings, "jobs/verify.py", [], outputs=outputs, s3=s3)
    with pytest.raises(RuntimeMismatch, match=re.escape("runs emr-spark-7.13.0")):
        emr_serverless.job_driver(
            settings, "jobs/verify.py", [], outputs={**outputs, "emr_release_label": "emr-spark-7.13.0"}, s3=s3
        )
    s3.objects["jars/manifest.json"] = json.dumps(
        {"release_label": runtime.release_label, "jars": list(runtime.jar_names().values())}
    ).encode()
    with pytest.raises(MissingArtifacts, match="no application uploaded"):
        emr_serverless.job_driver(settings, "jobs/verify.py", [], outputs=outputs, s3=s3)
    s3.objects["manifests/application.json"] = (
        Application("p.zip", "c.zip", {"jobs/stream.py": "e/s.py"}).to_json().encode()
    )
    with pytest.raises(MissingArtifacts, match=re.escape("jobs/verify.py is not among the uploaded entry points")):
        emr_serverless.job_driver(settings, "jobs/verify.py", [], outputs=outputs, s3=s3)
