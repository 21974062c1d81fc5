"""Every AWS action the platform's code performs: as which role, on what, and why. The map
tests/infra/test_iam_actions.py checks against terraform/modules/iam/main.tf: a boto3 call it does
not know, or a need no statement of that role grants, fails the test.

Who runs what (the rule): a call is made by the role of the process that runs the module.

- spark, the Spark runtime role: an EMR Serverless job run. It runs the job entry points (eo/cloud/
  artifacts.py ENTRY_POINTS: the stream, rebuild, verify, maintenance, reset) and what they import:
  streaming/, batch/, ops/reset.py, eo/runtime/, and the environment's cloud implementations
  (eo/cloud/environment.py, s3.py, dynamodb_lease.py, msk_iam.py). Spark's own S3A, the Delta
  S3DynamoDBLogStore and the Kafka source run in the same job run, as the same role.
- airflow, the MWAA execution role: an Airflow worker. It runs dags/ and what their @task functions
  call in-process (never Spark): the launchers' eo/cloud/emr_serverless.py run and cancel (with the
  job driver's read of the jar and application manifests), ops/stream_service.py EmrStreamService (stream_supervisor
  on aws: the stream is a job run the worker starts, watches and cancels, not a process of its own),
  eo/runtime/monitoring.py health (checkpoint and Kafka lag), eo/runtime/maintenance.py's retention
  guard and report clean-up, the verification ledger and verdicts, and verify_agreement's
  answer_without_spark (the rebuild coverage records and the Delta logs of the compared tables,
  through delta-rs). MWAA itself uses the same role (DAGs bucket, logs, queue, metrics).
- no role of terraform/modules/iam: what a person or CI runs with their own credentials:
  `python -m eo.cloud.emr_serverless upload` (terraform apply uploads the same objects), the
  producer, ops/quarantine (republish), infra/ and lab/.

A module both roles run (eo/cloud/s3.py ObjectStoreFiles) is attributed per role, per location and
per operation (FILE_USES): Airflow reads the stream's progress and writes only reports.
Resources are written in Terraform's terms (${var.*} of the iam module, ${aws_iam_role.spark.arn}):
an example ARN each call reaches, which a statement's Resource must match.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from dataclasses import dataclass

from eo.cloud.outputs import (
    KAFKA_CLUSTER_ACTIONS,
    LOG_STORE_ACTIONS,
    MONITOR_KAFKA_GROUP_ACTIONS,
    MONITOR_KAFKA_TOPIC_ACTIONS,
    SPARK_KAFKA_GROUP_ACTIONS,
    SPARK_KAFKA_GROUP_PREFIX,
    SPARK_KAFKA_TOPIC_ACTIONS,
    SPARK_S3_BUCKET_ACTIONS,
    SPARK_S3_OBJECT_ACTIONS,
)
from eo.core.sources import DECLARED
from eo.runtime.config import REPO_ROOT, source_prefix

SPARK, AIRFLOW = "spark", "airflow"
# The inline policy of each role in terraform/modules/iam/main.tf.
POLICIES = {SPARK: "aws_iam_role_policy.spark", AIRFLOW: "aws_iam_role_policy.airflow"}
IAM_MODULE = "terraform/modules/iam/main.tf"

# The product code whose AWS calls are mapped (infra/, lab/, producer/ run as a person: no role here).
PRODUCT = ("eo", "ops", "dags", "streaming", "batch", "jobs", "plugins")

# --- boto3 operations -> IAM actions (the Service Authorization Reference) --------------------

OPERATIONS: dict[tuple[str, str], frozenset[str]] = {
    ("s3", "GetObject"): frozenset({"s3:GetObject"}),
    ("s3", "HeadObject"): frozenset({"s3:GetObject"}),
    ("s3", "PutObject"): frozenset({"s3:PutObject"}),
    ("s3", "CreateMultipartUpload"): frozenset({"s3:PutObject"}),
    ("s3", "UploadPart"): frozenset({"s3:PutObject"}),
    ("s3", "CompleteMultipartUpload"): frozenset({"s3:PutObject"}),
    ("s3", "AbortMultipartUpload"): frozenset({"s3:AbortMultipartUpload"}),
    ("s3", "ListObjectsV2"): frozenset({"s3:ListBucket"}),
    ("s3", "ListObjects"): frozenset({"s3:ListBucket"}),
    ("s3", "ListObjectVersions"): frozenset({"s3:ListBucketVersions"}),
    ("s3", "DeleteObject"): frozenset({"s3:DeleteObject"}),
    ("s3", "DeleteObjects"): frozenset({"s3:DeleteObject"}),
    ("s3", "GetObjectTagging"): frozenset({"s3:GetObjectTagging"}),
    # Onto itself with new tags (eo/cloud/artifact_store.py publish): read the source, write the copy and its tags.
    ("s3", "CopyObject"): frozenset({"s3:GetObject", "s3:PutObject", "s3:PutObjectTagging"}),
    ("dynamodb", "GetItem"): frozenset({"dynamodb:GetItem"}),
    ("dynamodb", "PutItem"): frozenset({"dynamodb:PutItem"}),
    ("dynamodb", "UpdateItem"): frozenset({"dynamodb:UpdateItem"}),
    ("dynamodb", "Query"): frozenset({"dynamodb:Query"}),
    ("dynamodb", "DescribeTable"): frozenset({"dynamodb:DescribeTable"}),
    # Starting a run hands it the Spark role: PassRole on that role.
    ("emr-serverless", "StartJobRun"): frozenset({"emr-serverless:StartJobRun", "iam:PassRole"}),
    ("emr-serverless", "GetJobRun"): frozenset({"emr-serverless:GetJobRun"}),
    ("emr-serverless", "ListJobRuns"): frozenset({"emr-serverless:ListJobRuns"}),
    ("emr-serverless", "CancelJobRun"): frozenset({"emr-serverless:CancelJobRun"}),
}
# With a VersionId, the same operations need the *Version actions (neither role has them).
VERSIONED = {
    ("s3", "GetObject"): "s3:GetObjectVersion",
    ("s3", "HeadObject"): "s3:GetObjectVersion",
    ("s3", "DeleteObject"): "s3:DeleteObjectVersion",
    ("s3", "DeleteObjects"): "s3:DeleteObjectVersion",
}
# boto3's managed transfers and helpers: the operations they make (a multipart upload above 8 MB,
# aborted when a part fails).
_UPLOAD = ("PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload", "AbortMultipartUpload")
_DOWNLOAD = ("HeadObject", "GetObject")
TRANSFERS: dict[tuple[str, str], tuple[str, ...]] = {
    ("s3", "upload_file"): _UPLOAD,
    ("s3", "upload_fileobj"): _UPLOAD,
    ("s3", "download_file"): _DOWNLOAD,
    ("s3", "download_fileobj"): _DOWNLOAD,
}
# Actions on a bucket's ARN; every other s3 action is on an object's.
S3_BUCKET_ACTIONS = frozenset(
    {"s3:ListBucket", "s3:ListBucketVersions", "s3:ListBucketMultipartUploads", "s3:GetBucketLocation"}
)
# Actions on a job run's ARN (<application>/jobruns/<id>); the others on the application's.
EMR_JOB_RUN_ACTIONS = frozenset({"emr-serverless:GetJobRun", "emr-serverless:CancelJobRun"})
SPARK_ROLE_ARN = "${aws_iam_role.spark.arn}"


def operation_actions(service: str, operation: str, params: dict | None = None) -> frozenset[str]:
    """The IAM actions one API operation needs (KeyError: not in the map yet)."""
    params = params or {}
    versioned = "VersionId" in params or any("VersionId" in o for o in params.get("Delete", {}).get("Objects", []))
    if versioned and (service, operation) in VERSIONED:
        return frozenset({VERSIONED[(service, operation)]})
    return OPERATIONS[(service, operation)]


def method_operations(service: str, method: str, operation_of) -> tuple[str, ...]:
    """The API operations a client method makes: a transfer's several, else the one botocore names
    it (`operation_of`: snake_case method -> operation name, from the service's model)."""
    return TRANSFERS.get((service, method)) or (operation_of(method),)


def resource(action: str, location: str) -> str:
    """The ARN an action reaches at a call site's location (an object, a table, an application)."""
    if action in S3_BUCKET_ACTIONS:
        return location.split("/", 1)[0]
    if action in EMR_JOB_RUN_ACTIONS:
        return f"{location}/jobruns/RUN"
    if action == "iam:PassRole":
        return SPARK_ROLE_ARN
    return location


# --- where the boto3 calls are, who makes them, on what ----------------------------------------


@dataclass(frozen=True)
class Site:
    """The boto3 calls of a module, or of one class or function in it (`module:Qualname`; the most
    specific key applies)."""

    service: str
    roles: tuple[str, ...]  # () : run with a person's credentials, nothing for terraform/modules/iam
    location: str | None  # an ARN the calls reach; None: per role and operation, FILE_USES
    why: str


ARTIFACTS = "${var.artifacts_bucket_arn}"
SITES: dict[str, Site] = {
    "eo.cloud.s3:ObjectStoreFiles": Site("s3", (SPARK, AIRFLOW), None, "the environment's files on a bucket"),
    "eo.cloud.dynamodb_lease:DynamoLease": Site(
        "dynamodb",
        (SPARK,),
        "${var.log_store_table_arn}",
        "the epoch lease of the stream and the jobs (the log store's table)",
    ),
    "eo.cloud.dynamodb_lease:DynamoLease._get": Site(
        "dynamodb",
        (SPARK, AIRFLOW),
        "${var.log_store_table_arn}",
        "the lease's item read: stream_supervisor asks who holds the lease before it starts the stream",
    ),
    "eo.cloud.emr_serverless": Site(
        "emr-serverless",
        (AIRFLOW,),
        "${var.emr_application_arn}",
        "the DAGs' launcher starts, waits for and cancels job runs",
    ),
    "eo.cloud.artifact_store:uploaded_jars": Site(
        "s3", (AIRFLOW,), f"{ARTIFACTS}/jars/manifest.json", "a job driver names the jars the last upload recorded"
    ),
    "eo.cloud.artifact_store:uploaded_application": Site(
        "s3",
        (AIRFLOW,),
        f"{ARTIFACTS}/manifests/application.json",
        "a job driver names the code, conf and entry point the last upload made current",
    ),
    "eo.cloud.emr_serverless:upload": Site(
        "s3", (), f"{ARTIFACTS}/jars/JAR", "a person's upload without Terraform (terraform apply uploads the same)"
    ),
    **{
        f"eo.cloud.artifact_store:{name}": Site(
            "s3", (), f"{ARTIFACTS}/KEY", "the upload of build/artifacts terraform apply runs (or a person's upload)"
        )
        for name in ("publish", "_object_tags", "_mark", "_read_manifest")
    },
    "ops.stream_service:EmrStreamService": Site(
        "emr-serverless",
        (AIRFLOW,),
        "${var.emr_application_arn}",
        "stream_supervisor watches, starts and cancels the stream's run",
    ),
}
# Methods a boto3 client's name would match that are no client's (module, method): why.
NOT_CLIENTS = {("eo.runtime.sinks.postgres", "copy"): "psycopg's Cursor.copy (COPY FROM STDIN)"}

READS = frozenset({"names", "read_text", "read_bytes", "exists", "modified"})
EVERY_FILE_OPERATION = READS | {"write_text", "delete_file", "delete_tree", "put_tree", "make_folder"}


def aws_roots() -> dict[str, str]:
    """conf/platform.toml's aws roots (lake, checkpoints, acks, reports) as ARNs in Terraform's terms."""
    raw = tomllib.loads((REPO_ROOT / "conf" / "platform.toml").read_text())["env"]["aws"]
    return {key: arn(raw[key]) for key in ("lake_root", "checkpoint_root", "acks_root", "reports_root")}


def arn(uri: str) -> str:
    """s3a://${tf:lake_bucket}/lake (or s3a://lake_bucket/lake) -> ${var.lake_bucket_arn}/lake."""
    bucket, _, key = uri.split("://", 1)[1].partition("/")
    bucket = bucket.removeprefix("${tf:").removesuffix("}")
    return f"${{var.{bucket}_arn}}" + (f"/{key}" if key else "")


def file_uses() -> dict[str, dict[str, frozenset[str]]]:
    """Which Files operations each role performs under which location (an ARN prefix)."""
    roots = aws_roots()
    lake = roots["lake_root"]
    return {
        # The job runs own the lake: every operation everywhere.
        SPARK: {root: EVERY_FILE_OPERATION for root in roots.values()},
        AIRFLOW: {
            # The ledger, the verdicts, the settled rebuild markers, old reports' clean-up.
            roots["reports_root"]: READS | {"write_text", "delete_file"},
            # stream_supervisor's health and the VACUUM guard read the stream's checkpoint ...
            roots["checkpoint_root"]: READS,
            # ... and each source's seed table's log (eo/runtime/maintenance.py delta_readers), and
            # verify_agreement's pick_interval: what was rebuilt (eo/runtime/coverage.py
            # coverage_folder), in each source's folder of the lake (eo/runtime/config.py source_prefix).
            **{f"{lake}{source_prefix(name)}/_stream": READS for name in DECLARED},
            **{f"{lake}{source_prefix(name)}/_rebuild/_rebuilt": READS for name in DECLARED},
        },
    }


# --- what is no boto3 call ------------------------------------------------------------------


@dataclass(frozen=True)
class Need:
    role: str
    action: str
    resource: str  # an ARN in Terraform's terms that the action reaches
    why: str


def _each(role: str, actions, location: str, why: str) -> Iterator[Need]:
    for action in sorted(actions):
        yield Need(role, action, resource(action, location), why)


def fixed_needs() -> list[Need]:
    """What Spark's connectors, the EMR runtime, delta-rs, the Kafka clients and MWAA itself do as
    each role: needs no boto3 call of the code shows."""
    from eo.cloud.artifacts import CONF_ZIP, ENTRY_POINTS, OUTPUTS_KEY, PYFILES_ZIP, content_key
    from eo.runtime.kafka_admin import OFFSETS_GROUP

    roots = aws_roots()
    needs: list[Need] = []
    # S3A (Delta on Spark, checkpoints), delta-rs and pyarrow in the job runs, on every root.
    for root in roots.values():
        needs += _each(SPARK, SPARK_S3_OBJECT_ACTIONS, f"{root}/KEY", "S3A, delta-rs: read, write, delete, multipart")
        needs += _each(SPARK, SPARK_S3_BUCKET_ACTIONS, f"{root}/KEY", "S3A: list, bucket region, multipart uploads")
    # A job run reads its entry point, code, conf, outputs and jars from the artifacts (S3A/EMRFS).
    keys = [content_key(key, b"") for key in (*(f"entrypoints/{e}" for e in ENTRY_POINTS), CONF_ZIP, PYFILES_ZIP)]
    keys += [OUTPUTS_KEY, "jars/JAR.jar"]
    for key in keys:
        needs += _each(
            SPARK, {"s3:GetObject"}, f"{ARTIFACTS}/{key}", "the job run's artifacts (spark.archives, jars, py-files)"
        )
    needs += _each(
        SPARK, {"s3:ListBucket", "s3:GetBucketLocation"}, f"{ARTIFACTS}/KEY", "S3A's status of the artifacts"
    )
    # SSE-KMS: every object written is encrypted with the data key, every one read decrypted.
    needs += _each(SPARK, {"kms:Decrypt", "kms:GenerateDataKey"}, "${var.kms_key_arn}", "SSE-KMS objects (s3a)")
    # Delta's S3DynamoDBLogStore (Spark's commits) and the lease share the table.
    needs += _each(SPARK, LOG_STORE_ACTIONS, "${var.log_store_table_arn}", "io.delta.storage.S3DynamoDBLogStore")
    # MSK IAM: the Spark Kafka source, and the Python clients of the stream (eo/runtime/kafka_admin.py:
    # topic_partitions; the source-loss guard's earliest offsets, a consumer of group OFFSETS_GROUP).
    # Each declared source's topic (eo/core/sources/; Terraform grants the same list).
    topics = [f"${{var.kafka_topic_arn_prefix}}/{s.topic}" for s in DECLARED.values()]
    groups = "${var.kafka_group_arn_prefix}"
    needs += _each(SPARK, KAFKA_CLUSTER_ACTIONS, "${var.kafka_cluster_arn}", "MSK IAM: every client connects")
    for topic in topics:
        needs += _each(SPARK, SPARK_KAFKA_TOPIC_ACTIONS, topic, "the Spark Kafka source reads the topic")
    needs += _each(
        SPARK, SPARK_KAFKA_GROUP_ACTIONS, f"{groups}/{SPARK_KAFKA_GROUP_PREFIX}UUID", "the source's consumers' groups"
    )
    needs += _each(
        SPARK,
        MONITOR_KAFKA_GROUP_ACTIONS,
        f"{groups}/{OFFSETS_GROUP}",
        "the stream's source-loss guard: source_gaps.earliest_offsets (kafka_admin.watermarks)",
    )
    # Airflow: the lag check (kafka_admin.end_offsets) as the stream supervisor's worker.
    needs += _each(AIRFLOW, KAFKA_CLUSTER_ACTIONS, "${var.kafka_cluster_arn}", "MSK IAM: the lag check connects")
    for topic in topics:
        needs += _each(AIRFLOW, MONITOR_KAFKA_TOPIC_ACTIONS, topic, "the lag check's end offsets")
    needs += _each(AIRFLOW, MONITOR_KAFKA_GROUP_ACTIONS, f"{groups}/{OFFSETS_GROUP}", "the lag check's consumer group")
    # Airflow reads SSE-KMS objects (checkpoints, Delta logs) and writes reports.
    needs += _each(
        AIRFLOW, {"kms:Decrypt", "kms:GenerateDataKey"}, "${var.kms_key_arn}", "SSE-KMS objects it reads and writes"
    )
    # answer_without_spark: the compared tables' Delta logs through delta-rs (eo/runtime/quality/presence.py).
    for table in airflow_delta_logs():
        needs += _each(
            AIRFLOW,
            {"s3:GetObject", "s3:ListBucket"},
            f"{table}/_delta_log/00000000000000000000.json",
            "delta-rs reads a compared table's log",
        )
    # MWAA itself, as the execution role (AWS's documented execution role policy).
    mwaa = "MWAA's own use of its execution role"
    needs += _each(
        AIRFLOW,
        {"s3:GetObject", "s3:GetObjectVersion", "s3:ListBucket", "s3:GetBucketLocation"},
        "${var.dags_bucket_arn}/dags/x.py",
        mwaa,
    )
    needs += _each(AIRFLOW, {"s3:GetAccountPublicAccessBlock"}, "*", mwaa)
    needs += _each(
        AIRFLOW,
        {"airflow:PublishMetrics"},
        "arn:aws:airflow:${local.region}:${local.account}:environment/${var.airflow_environment_name}",
        mwaa,
    )
    log_group = "arn:aws:logs:${local.region}:${local.account}:log-group:airflow-${var.airflow_environment_name}-Task"
    logs = {
        "logs:CreateLogStream",
        "logs:CreateLogGroup",
        "logs:PutLogEvents",
        "logs:GetLogEvents",
        "logs:GetLogRecord",
        "logs:GetLogGroupFields",
        "logs:GetQueryResults",
        "logs:DescribeLogGroups",
    }
    needs += _each(AIRFLOW, logs, log_group, mwaa)
    sqs = {
        "sqs:ChangeMessageVisibility",
        "sqs:DeleteMessage",
        "sqs:GetQueueAttributes",
        "sqs:GetQueueUrl",
        "sqs:ReceiveMessage",
        "sqs:SendMessage",
    }
    needs += _each(AIRFLOW, sqs, "arn:aws:sqs:${local.region}:ACCOUNT:airflow-celery-QUEUE", mwaa)
    needs += _each(
        AIRFLOW, {"kms:DescribeKey", "kms:Encrypt"}, "${var.kms_key_arn}", mwaa + " (its encrypted queue and logs)"
    )
    needs += _each(AIRFLOW, {"cloudwatch:PutMetricData"}, "*", mwaa)
    return needs


def airflow_delta_logs() -> list[str]:
    """The tables verify_agreement's pick_interval reads the logs of (eo/runtime/quality/presence.py CHECKED)."""
    from eo.runtime.config import load_settings
    from eo.runtime.quality.presence import CHECKED

    lake = aws_roots()["lake_root"]
    settings = load_settings("local").with_overrides(lake_root=lake)
    return sorted({settings.table_path(table.name, namespace) for table, namespace, _ in CHECKED})


# Grants no need explains today, each with why it stays.
TOLERATED = {
    (SPARK, "s3:PutObject", f"{ARTIFACTS}/logs/*"): "EMR Serverless writes a run's logs there once its "
    "monitoringConfiguration names s3://<artifacts>/logs/ (no run sets it yet)",
    (AIRFLOW, "emr-serverless:GetApplication", "${var.emr_application_arn}"): "StartJobRun starts a stopped "
    "application (autoStart); AWS's examples grant these beside it: kept until a real account shows them unneeded",
    (AIRFLOW, "emr-serverless:StartApplication", "${var.emr_application_arn}"): "as GetApplication",
}
