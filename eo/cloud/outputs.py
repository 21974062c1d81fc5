"""What the application expects of the cloud, and where it reads what Terraform created.

Terraform's outputs are the only source of the cloud names: `terraform output -json` is saved
as conf/terraform-outputs/<env>.json and conf/platform.toml refers to its values as ${tf:name}
(read by eo/runtime/tf_outputs.py).
The IAM actions below are what the jobs do; a test keeps Terraform's policies equal to them.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from eo.cloud.versions import cloud_versions

# The outputs conf/platform.toml and the deploy tooling read.
REQUIRED_OUTPUTS = (
    "region",
    "lake_bucket",
    "checkpoint_bucket",
    "artifacts_bucket",
    "dags_bucket",
    "log_store_table",
    "kms_key_arn",
    "spark_role_arn",
    "airflow_role_arn",
    "emr_application_id",
    "emr_release_label",
    "kafka_bootstrap",
)

# Delta writes and VACUUM deletes, s3a's multipart uploads and their clean-up.
SPARK_S3_OBJECT_ACTIONS = frozenset(
    {"s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"}
)
SPARK_S3_BUCKET_ACTIONS = frozenset({"s3:ListBucket", "s3:GetBucketLocation", "s3:ListBucketMultipartUploads"})
# io.delta.storage.S3DynamoDBLogStore: checks the table, reads and conditionally writes entries.
LOG_STORE_ACTIONS = frozenset(
    {"dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"}
)
# Key schema S3DynamoDBLogStore reads and writes.
LOG_STORE_KEYS = {"hash": "tablePath", "range": "fileName", "ttl": "expireTime"}

# MSK IAM actions (kafka-cluster:*), by the resource they apply to. Every client connects to the cluster.
KAFKA_CLUSTER_ACTIONS = frozenset({"kafka-cluster:Connect"})
# The streaming source: topic metadata and end offsets (DescribeTopic), fetches (ReadData). Its consumers
# carry a group id (spark-kafka-source-*) whose coordinator they may look up (DescribeGroup); they never
# commit to it (no AlterGroup): the offsets live in the checkpoint. Nothing in a Spark job writes to Kafka.
SPARK_KAFKA_TOPIC_ACTIONS = frozenset({"kafka-cluster:DescribeTopic", "kafka-cluster:ReadData"})
SPARK_KAFKA_GROUP_ACTIONS = frozenset({"kafka-cluster:DescribeGroup"})
SPARK_KAFKA_GROUP_PREFIX = "spark-kafka-source-"  # Spark's default groupIdPrefix
# The supervisor's lag check (eo.runtime.kafka_admin.end_offsets): partitions and end offsets are topic
# metadata and ListOffsets (DescribeTopic), its consumer's group lookup DescribeGroup; it reads no record.
# The stream's source-loss guard reads earliest offsets with the same consumer (group eo-offsets), as the
# Spark role. Who does what, as which role: eo/cloud/iam_actions.py.
MONITOR_KAFKA_TOPIC_ACTIONS = frozenset({"kafka-cluster:DescribeTopic"})
MONITOR_KAFKA_GROUP_ACTIONS = frozenset({"kafka-cluster:DescribeGroup"})

EMR_POM = Path(__file__).resolve().parents[2] / "infra" / "maven" / "emr" / "pom.xml"
READER_POM = EMR_POM.parent.parent / "reader" / "pom.xml"
POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


class RuntimeMismatch(ValueError):
    """Jars, EMR release and Terraform disagree on the Spark runtime."""


@dataclass(frozen=True)
class EmrRuntime:
    """The EMR release the aws environment runs on and the jars resolved for it (infra/maven/emr/pom.xml)."""

    release_label: str
    emr_spark_version: str  # as the release names it, e.g. 4.1.3-amzn-0
    emr_delta_version: str
    log_store_jar: str  # on the release image
    scala_binary_version: str
    spark_binary_version: str
    spark_version: str  # upstream, resolved from Maven
    delta_version: str
    msk_iam_auth_version: str

    def jar_names(self) -> dict[str, str]:
        """File names `make jars-emr` gives the jars that must match the release."""
        scala, spark, delta = self.scala_binary_version, self.spark_version, self.delta_version
        return {
            "delta-spark": f"delta-spark_{self.spark_binary_version}_{scala}-{delta}.jar",
            "delta-storage": f"delta-storage-{delta}.jar",
            "spark-sql-kafka": f"spark-sql-kafka-0-10_{scala}-{spark}.jar",
            "aws-msk-iam-auth": f"aws-msk-iam-auth-{self.msk_iam_auth_version}.jar",
            # The strict reading's UDF (jvm/reader), built against Spark 4.1's API: it runs on both.
            "effectively-once-reader": f"effectively-once-reader-{reader_version()}.jar",
        }

    def check(self) -> EmrRuntime:
        """The resolved versions are the upstream ones of what the release ships."""
        upstream = {
            "Spark": (self.spark_version, self.emr_spark_version),
            "Delta": (self.delta_version, self.emr_delta_version),
        }
        for name, (resolved, shipped) in upstream.items():
            if shipped.split("-")[0] != resolved:
                raise RuntimeMismatch(f"{self.release_label} ships {name} {shipped}, the jars are for {resolved}")
        if ".".join(self.spark_version.split(".")[:2]) != self.spark_binary_version:
            raise RuntimeMismatch(f"Spark {self.spark_version} is not Spark {self.spark_binary_version}")
        matrix = cloud_versions()
        pom = {"release": self.release_label, "Spark": self.spark_version, "Delta": self.delta_version}
        wanted = {"release": matrix.emr_release, "Spark": matrix.spark, "Delta": matrix.delta}
        for name, value in pom.items():
            if value != wanted[name]:
                said = f"infra/cloud-versions.json says {wanted[name]}"
                raise RuntimeMismatch(f"infra/maven/emr/pom.xml resolves for {name} {value}, {said}")
        return self


def reader_version(pom: Path = READER_POM) -> str:
    return (ET.parse(pom).find("m:version", POM_NS).text or "").strip()


def emr_runtime(pom: Path = EMR_POM) -> EmrRuntime:
    """The release and versions of infra/maven/emr/pom.xml, checked against each other."""
    properties = {e.tag.split("}")[1]: (e.text or "").strip() for e in ET.parse(pom).find("m:properties", POM_NS)}
    return EmrRuntime(
        release_label=properties["emr.release.label"],
        emr_spark_version=properties["emr.spark.version"],
        emr_delta_version=properties["emr.delta.version"],
        log_store_jar=properties["emr.log-store.jar"],
        scala_binary_version=properties["scala.binary.version"],
        spark_binary_version=properties["spark.binary.version"],
        spark_version=properties["spark.version"],
        delta_version=properties["delta.version"],
        msk_iam_auth_version=properties["msk-iam-auth.version"],
    ).check()
