# Managed Airflow (MWAA) running this repository's dags/ folder. The DAGs only wire tasks;
# their Spark work is submitted to the compute module's EMR Serverless application.

resource "aws_s3_bucket" "dags" {
  #checkov:skip=CKV_AWS_144:DAGs and requirements are deployed from git; a second region adds nothing
  #checkov:skip=CKV2_AWS_62:MWAA polls the bucket; no consumer for event notifications
  bucket        = var.dags_bucket_name
  force_destroy = var.force_destroy
  tags          = var.tags
}

resource "aws_s3_bucket_versioning" "dags" {
  bucket = aws_s3_bucket.dags.id
  versioning_configuration {
    status = "Enabled" # MWAA requires it
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "dags" {
  bucket = aws_s3_bucket.dags.id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = "aws:kms"
      kms_master_key_id = var.kms_key_arn
    }
    bucket_key_enabled = true
  }
}

resource "aws_s3_bucket_public_access_block" "dags" {
  bucket                  = aws_s3_bucket.dags.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_logging" "dags" {
  bucket        = aws_s3_bucket.dags.id
  target_bucket = var.access_log_bucket_name
  target_prefix = "dags/"
}

resource "aws_s3_bucket_lifecycle_configuration" "dags" {
  bucket = aws_s3_bucket.dags.id
  rule {
    id     = "old-dag-versions"
    status = "Enabled"
    filter {}
    noncurrent_version_expiration {
      noncurrent_days = 90
    }
    abort_incomplete_multipart_upload {
      days_after_initiation = 7
    }
  }
  depends_on = [aws_s3_bucket_versioning.dags]
}

resource "aws_s3_bucket_policy" "dags_tls_only" {
  bucket = aws_s3_bucket.dags.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid       = "DenyInsecureTransport"
      Effect    = "Deny"
      Principal = "*"
      Action    = "s3:*"
      Resource  = [aws_s3_bucket.dags.arn, "${aws_s3_bucket.dags.arn}/*"]
      Condition = { Bool = { "aws:SecureTransport" = "false" } }
    }]
  })
  depends_on = [aws_s3_bucket_public_access_block.dags]
}

locals {
  # The DAGs at the folder's root; beside them the packages their tasks import (the DAGs folder is
  # on sys.path; dags/.airflowignore keeps them unparsed) and the platform's configuration. Each
  # object's source_hash is its file's MD5: an apply uploads what changed, and only that (not etag:
  # the bucket's SSE-KMS makes S3's ETag no MD5 of the content).
  dag_files = merge(
    { for f in fileset(var.dags_folder, "**/*.py") : "dags/${f}" => "${var.dags_folder}/${f}" },
    { for f in fileset(var.dags_folder, ".airflowignore") : "dags/${f}" => "${var.dags_folder}/${f}" },
    merge([for pkg in var.packages : { for f in fileset("${var.repo_root}/${pkg}", "**/*.py") : "dags/${pkg}/${f}" => "${var.repo_root}/${pkg}/${f}" }]...),
    # The sources' declarations, which the packages read as data (eo/core/sources/).
    merge([for pkg in var.packages : { for f in fileset("${var.repo_root}/${pkg}", "**/*.schema.json") : "dags/${pkg}/${f}" => "${var.repo_root}/${pkg}/${f}" }]...),
    { for f in fileset("${var.repo_root}/conf", "*.toml") : "dags/conf/${f}" => "${var.repo_root}/conf/${f}" },
  )
}

resource "aws_s3_object" "dag_files" {
  for_each    = local.dag_files
  bucket      = aws_s3_bucket.dags.id
  key         = each.key
  source      = each.value
  source_hash = filemd5(each.value)
}

# MWAA reads plugins from one zip: plugins/eo_platform.py (the platform's pages in the UI) and
# plugins/eo_timetables.py (rebuild_derived's timetable: Airflow reads it back only through a plugin).
data "archive_file" "plugins" {
  type        = "zip"
  source_dir  = var.plugins_folder
  excludes    = ["__pycache__"]
  output_path = "${path.root}/.terraform/${var.environment_name}-plugins.zip"
}

resource "aws_s3_object" "plugins" {
  bucket      = aws_s3_bucket.dags.id
  key         = "plugins.zip"
  source      = data.archive_file.plugins.output_path
  source_hash = data.archive_file.plugins.output_md5
}

resource "aws_s3_object" "requirements" {
  bucket      = aws_s3_bucket.dags.id
  key         = "requirements.txt"
  source      = var.requirements_file
  source_hash = filemd5(var.requirements_file)
}

resource "aws_s3_object" "startup" {
  bucket  = aws_s3_bucket.dags.id
  key     = "startup.sh"
  content = join("\n", concat(["#!/bin/sh"], [for k, v in var.environment_variables : "export ${k}='${v}'"]))
}

resource "aws_mwaa_environment" "this" {
  name                             = var.environment_name
  airflow_version                  = var.airflow_version
  environment_class                = var.environment_class
  max_workers                      = var.max_workers
  execution_role_arn               = var.execution_role_arn
  kms_key                          = var.kms_key_arn
  source_bucket_arn                = aws_s3_bucket.dags.arn
  dag_s3_path                      = "dags/"
  plugins_s3_path                  = aws_s3_object.plugins.key
  plugins_s3_object_version        = aws_s3_object.plugins.version_id
  requirements_s3_path             = aws_s3_object.requirements.key
  requirements_s3_object_version   = aws_s3_object.requirements.version_id
  startup_script_s3_path           = aws_s3_object.startup.key
  startup_script_s3_object_version = aws_s3_object.startup.version_id
  webserver_access_mode            = var.webserver_access_mode

  airflow_configuration_options = merge(
    { "core.load_examples" = "False", "core.dags_are_paused_at_creation" = "True" },
    var.airflow_configuration_options,
  )

  network_configuration {
    subnet_ids         = var.subnet_ids
    security_group_ids = var.security_group_ids
  }

  logging_configuration {
    dag_processing_logs {
      enabled   = true
      log_level = "INFO"
    }
    scheduler_logs {
      enabled   = true
      log_level = "INFO"
    }
    task_logs {
      enabled   = true
      log_level = "INFO"
    }
    webserver_logs {
      enabled   = true
      log_level = "WARNING"
    }
    worker_logs {
      enabled   = true
      log_level = "WARNING"
    }
  }

  tags = var.tags

  # The DAGs import the packages uploaded beside them: upload those first.
  depends_on = [aws_s3_object.dag_files]
}
