# Least privilege: the Spark runtime may read and write exactly the lake and checkpoint
# buckets, read the artifacts, coordinate commits in the log store table, use the data key and
# read the sources' topics on MSK. Airflow may submit and watch job runs on this account's EMR
# Serverless applications of this platform, pass the Spark role, read its DAGs and the
# verification reports, and read the topic's end offsets for the lag check.
# tests/infra/test_iam_actions.py checks every statement against what the code does (eo/cloud/iam_actions.py):
# a call no statement grants fails it, and so does a grant nothing needs.

data "aws_caller_identity" "current" {}
data "aws_region" "current" {}

locals {
  # What the jobs do on S3 (eo/cloud/outputs.py lists the same; a test keeps the two equal).
  s3_object_rw = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"]
  s3_bucket_rw = ["s3:ListBucket", "s3:GetBucketLocation", "s3:ListBucketMultipartUploads"]
  log_store    = ["dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"]
  data_key     = ["kms:Decrypt", "kms:GenerateDataKey"]
  # MSK IAM (eo/cloud/outputs.py lists the same; a test keeps the two equal). Every client connects; the
  # stream reads its topic and looks up its consumers' groups (offsets live in the checkpoint: no
  # AlterGroup); the lag check reads topic metadata and end offsets, and looks up its group.
  kafka_connect       = ["kafka-cluster:Connect"]
  spark_kafka_topic   = ["kafka-cluster:DescribeTopic", "kafka-cluster:ReadData"]
  spark_kafka_group   = ["kafka-cluster:DescribeGroup"]
  monitor_kafka_topic = ["kafka-cluster:DescribeTopic"]
  monitor_kafka_group = ["kafka-cluster:DescribeGroup"]
  spark_group_prefix  = "spark-kafka-source-" # Spark's default groupIdPrefix
  monitor_group       = "eo-offsets"          # eo.runtime.kafka_admin.OFFSETS_GROUP
  kafka_topic_arns    = [for topic in var.kafka_topics : "${var.kafka_topic_arn_prefix}/${topic}"]
  account             = data.aws_caller_identity.current.account_id
  region              = data.aws_region.current.region
}

# --- Spark runtime (EMR Serverless job runs) ------------------------------------------------

resource "aws_iam_role" "spark" {
  name = "${var.name_prefix}-spark-runtime"
  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = "emr-serverless.amazonaws.com" }
      Action    = "sts:AssumeRole"
      Condition = { StringEquals = { "aws:SourceAccount" = local.account } }
    }]
  })
  tags = var.tags
}

resource "aws_iam_role_policy" "spark" {
  name = "lake-access"
  role = aws_iam_role.spark.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid      = "TablesAndCheckpoints"
        Effect   = "Allow"
        Action   = local.s3_object_rw
        Resource = ["${var.lake_bucket_arn}/*", "${var.checkpoint_bucket_arn}/*"]
      },
      {
        Sid      = "ListTablesAndCheckpoints"
        Effect   = "Allow"
        Action   = local.s3_bucket_rw
        Resource = [var.lake_bucket_arn, var.checkpoint_bucket_arn]
      },
      {
        Sid      = "ReadArtifacts"
        Effect   = "Allow"
        Action   = ["s3:GetObject"]
        Resource = ["${var.artifacts_bucket_arn}/*"]
      },
      {
        Sid      = "ListArtifacts"
        Effect   = "Allow"
        Action   = ["s3:ListBucket", "s3:GetBucketLocation"]
        Resource = [var.artifacts_bucket_arn]
      },
      {
        Sid      = "WriteJobLogs"
        Effect   = "Allow"
        Action   = ["s3:PutObject"]
        Resource = ["${var.artifacts_bucket_arn}/logs/*"]
      },
      {
        Sid      = "DeltaLogStore"
        Effect   = "Allow"
        Action   = local.log_store
        Resource = [var.log_store_table_arn]
      },
      {
        Sid      = "DataKey"
        Effect   = "Allow"
        Action   = local.data_key
        Resource = [var.kms_key_arn]
      },
      {
        Sid      = "KafkaConnect"
        Effect   = "Allow"
        Action   = local.kafka_connect
        Resource = [var.kafka_cluster_arn]
      },
      {
        Sid      = "KafkaReadTheTopic"
        Effect   = "Allow"
        Action   = local.spark_kafka_topic
        Resource = local.kafka_topic_arns
      },
      {
        Sid      = "KafkaSourceGroups"
        Effect   = "Allow"
        Action   = local.spark_kafka_group
        Resource = ["${var.kafka_group_arn_prefix}/${local.spark_group_prefix}*"]
      },
      {
        # The stream's source-loss guard reads each partition's earliest offset with the lag check's
        # consumer (eo/runtime/source_gaps.py earliest_offsets, eo/runtime/kafka_admin.py watermarks).
        Sid      = "KafkaOffsetsGroup"
        Effect   = "Allow"
        Action   = local.monitor_kafka_group
        Resource = ["${var.kafka_group_arn_prefix}/${local.monitor_group}"]
      },
    ]
  })
}

# --- Airflow (MWAA execution role) ----------------------------------------------------------

resource "aws_iam_role" "airflow" {
  name = "${var.name_prefix}-airflow"
  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = ["airflow.amazonaws.com", "airflow-env.amazonaws.com"] }
      Action    = "sts:AssumeRole"
      Condition = { StringEquals = { "aws:SourceAccount" = local.account } }
    }]
  })
  tags = var.tags
}

resource "aws_iam_role_policy" "airflow" {
  name = "orchestrate-platform"
  role = aws_iam_role.airflow.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid    = "SubmitAndWatchSparkJobs"
        Effect = "Allow"
        Action = ["emr-serverless:StartJobRun", "emr-serverless:GetJobRun", "emr-serverless:ListJobRuns", "emr-serverless:CancelJobRun", "emr-serverless:GetApplication", "emr-serverless:StartApplication"]
        # This platform's application and its job runs, by ARN: the job runs carry no tags (a
        # ResourceTag condition would deny watching and cancelling them).
        Resource = [var.emr_application_arn, "${var.emr_application_arn}/jobruns/*"]
      },
      {
        Sid       = "HandTheSparkRoleToJobRuns"
        Effect    = "Allow"
        Action    = ["iam:PassRole"]
        Resource  = [aws_iam_role.spark.arn]
        Condition = { StringEquals = { "iam:PassedToService" = "emr-serverless.amazonaws.com" } }
      },
      {
        Sid      = "ReadDags"
        Effect   = "Allow"
        Action   = ["s3:GetObject", "s3:GetObjectVersion", "s3:ListBucket", "s3:GetBucketLocation"]
        Resource = [var.dags_bucket_arn, "${var.dags_bucket_arn}/*"]
      },
      {
        # stream_supervisor and the VACUUM guard read the stream's checkpoint and the seed table's
        # Delta log where they are (eo/runtime/storage.py Files, eo/runtime/monitoring.py, eo/runtime/maintenance.py).
        Sid      = "ReadStreamProgress"
        Effect   = "Allow"
        Action   = ["s3:GetObject"]
        Resource = ["${var.checkpoint_bucket_arn}/checkpoints/*"]
      },
      {
        # Each source's seed table, under the source's folder of the lake.
        Sid      = "ReadEachSourcesSeed"
        Effect   = "Allow"
        Action   = ["s3:GetObject"]
        Resource = [for prefix in var.source_prefixes : "${var.lake_bucket_arn}/lake/${prefix}_stream/*"]
      },
      {
        # verify_agreement's pick_interval answers without Spark from what was rebuilt and the compared
        # tables' Delta logs, read by delta-rs (eo/runtime/quality/verdicts.py answer_without_spark).
        Sid      = "ReadTableLogs"
        Effect   = "Allow"
        Action   = ["s3:GetObject"]
        Resource = ["${var.lake_bucket_arn}/lake/*/_delta_log/*"]
      },
      {
        # What was rebuilt, in each source's folder of the lake (eo/runtime/coverage.py).
        Sid      = "ReadEachSourcesRebuildCoverage"
        Effect   = "Allow"
        Action   = ["s3:GetObject"]
        Resource = [for prefix in var.source_prefixes : "${var.lake_bucket_arn}/lake/${prefix}_rebuild/_rebuilt/*"]
      },
      {
        # stream_supervisor reads who holds the stream's lease (an item of the log store's table)
        # before it starts the stream: never beside a reset or a rebuild (eo/cloud/dynamodb_lease.py).
        Sid      = "ReadTheStreamLease"
        Effect   = "Allow"
        Action   = ["dynamodb:GetItem"]
        Resource = [var.log_store_table_arn]
      },
      {
        Sid      = "ListStreamProgress"
        Effect   = "Allow"
        Action   = ["s3:ListBucket"]
        Resource = [var.checkpoint_bucket_arn, var.lake_bucket_arn]
      },
      {
        # Job drivers name the jars and the application's keys the last upload recorded
        # (eo/cloud/artifact_store.py JAR_MANIFEST, eo/cloud/artifacts.py APPLICATION_MANIFEST).
        Sid      = "ReadArtifactManifests"
        Effect   = "Allow"
        Action   = ["s3:GetObject"]
        Resource = ["${var.artifacts_bucket_arn}/jars/manifest.json", "${var.artifacts_bucket_arn}/manifests/application.json"]
      },
      {
        Sid      = "MwaaChecksPublicAccess"
        Effect   = "Allow"
        Action   = ["s3:GetAccountPublicAccessBlock"]
        Resource = ["*"]
      },
      {
        # verify_agreement reads verdicts and removes the rebuild marker a passing check settles;
        # lake_maintenance's cleanup_reports deletes old reports (eo/runtime/maintenance.py).
        Sid      = "Reports"
        Effect   = "Allow"
        Action   = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"]
        Resource = ["${var.lake_bucket_arn}/reports/*"]
      },
      {
        # MWAA's scheduler and workers publish Airflow's metrics to CloudWatch as the execution role.
        Sid      = "PublishAirflowMetrics"
        Effect   = "Allow"
        Action   = ["airflow:PublishMetrics"]
        Resource = ["arn:aws:airflow:${local.region}:${local.account}:environment/${var.airflow_environment_name}"]
      },
      {
        Sid      = "AirflowLogs"
        Effect   = "Allow"
        Action   = ["logs:CreateLogStream", "logs:CreateLogGroup", "logs:PutLogEvents", "logs:GetLogEvents", "logs:GetLogRecord", "logs:GetLogGroupFields", "logs:GetQueryResults", "logs:DescribeLogGroups"]
        Resource = ["arn:aws:logs:${local.region}:${local.account}:log-group:airflow-${var.airflow_environment_name}-*"]
      },
      {
        Sid      = "CeleryQueue"
        Effect   = "Allow"
        Action   = ["sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage", "sqs:SendMessage"]
        Resource = ["arn:aws:sqs:${local.region}:*:airflow-celery-*"]
      },
      {
        Sid      = "DataKey"
        Effect   = "Allow"
        Action   = ["kms:Decrypt", "kms:DescribeKey", "kms:GenerateDataKey*", "kms:Encrypt"]
        Resource = [var.kms_key_arn]
      },
      {
        Sid      = "KafkaConnect"
        Effect   = "Allow"
        Action   = local.kafka_connect
        Resource = [var.kafka_cluster_arn]
      },
      {
        Sid      = "KafkaLagCheckTopic"
        Effect   = "Allow"
        Action   = local.monitor_kafka_topic
        Resource = local.kafka_topic_arns
      },
      {
        Sid      = "KafkaLagCheckGroup"
        Effect   = "Allow"
        Action   = local.monitor_kafka_group
        Resource = ["${var.kafka_group_arn_prefix}/${local.monitor_group}"]
      },
      {
        Sid       = "Metrics"
        Effect    = "Allow"
        Action    = ["cloudwatch:PutMetricData"]
        Resource  = ["*"]
        Condition = { StringEquals = { "cloudwatch:namespace" = "AmazonMWAA" } }
      },
    ]
  })
}

# Signing in to the Airflow UI: attach this policy to the users or groups who schedule work and
# trigger backfills. MWAA's UI (public or private) takes a web login token; with allowed CIDRs,
# only requests from them get one.
resource "aws_iam_policy" "airflow_ui" {
  name        = "${var.name_prefix}-airflow-ui"
  description = "Sign in to the ${var.airflow_environment_name} Airflow UI as an Op user"
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [merge(
      {
        Sid      = "SignInToTheAirflowUi"
        Effect   = "Allow"
        Action   = ["airflow:CreateWebLoginToken"]
        Resource = ["arn:aws:airflow:${local.region}:${local.account}:role/${var.airflow_environment_name}/Op"]
      },
      length(var.airflow_ui_allowed_cidrs) > 0 ? { Condition = { IpAddress = { "aws:SourceIp" = var.airflow_ui_allowed_cidrs } } } : {},
    )]
  })
  tags = var.tags
}
