# The platform's object storage: lake, checkpoints and artifacts buckets, plus one for their
# access logs. Versioned, SSE-KMS with a rotated customer key, no public access, TLS only.
# Lifecycle rules never expire current objects of a Delta table (only VACUUM may delete its
# files): they move quarantine to infrequent access, drop old reports and old noncurrent versions.

data "aws_caller_identity" "current" {}

data "aws_region" "current" {}

locals {
  buckets = {
    lake        = var.lake_bucket_name
    checkpoints = var.checkpoint_bucket_name
    artifacts   = var.artifacts_bucket_name
  }
}

resource "aws_kms_key" "data" {
  description             = "${var.name_prefix}: encryption of lake, checkpoints, artifacts and the Delta log store"
  enable_key_rotation     = true
  deletion_window_in_days = 30
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "AccountAdministersTheKey"
        Effect    = "Allow"
        Principal = { AWS = "arn:aws:iam::${data.aws_caller_identity.current.account_id}:root" }
        Action    = "kms:*"
        Resource  = "*"
      },
      {
        Sid       = "S3AccessLogDelivery"
        Effect    = "Allow"
        Principal = { Service = "logging.s3.amazonaws.com" }
        Action    = ["kms:GenerateDataKey", "kms:Decrypt"]
        Resource  = "*"
      },
      {
        # The platform's own log groups (the network module's VPC flow logs) and the MWAA
        # environment's (airflow-<environment>-DAGProcessing, -Task, ...: MWAA names them), no others.
        Sid       = "PlatformLogGroups"
        Effect    = "Allow"
        Principal = { Service = "logs.${data.aws_region.current.region}.amazonaws.com" }
        Action    = ["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"]
        Resource  = "*"
        Condition = {
          ArnLike = {
            "kms:EncryptionContext:aws:logs:arn" = [
              "arn:aws:logs:${data.aws_region.current.region}:${data.aws_caller_identity.current.account_id}:log-group:/${var.name_prefix}/*",
              "arn:aws:logs:${data.aws_region.current.region}:${data.aws_caller_identity.current.account_id}:log-group:airflow-${var.airflow_environment_name}-*",
            ]
          }
        }
      },
    ]
  })
  tags = var.tags
}

resource "aws_kms_alias" "data" {
  name          = "alias/${var.name_prefix}-data"
  target_key_id = aws_kms_key.data.key_id
}

# --- access logs ------------------------------------------------------------------------------

resource "aws_s3_bucket" "access_logs" {
  #checkov:skip=CKV_AWS_18:this is the access-log target; logging it into itself would loop
  #checkov:skip=CKV_AWS_144:access logs are diagnostic, not data; a second region is not worth its cost
  #checkov:skip=CKV2_AWS_62:nothing consumes events of the log bucket
  bucket        = var.access_log_bucket_name
  force_destroy = var.force_destroy
  tags          = var.tags
}

resource "aws_s3_bucket_versioning" "access_logs" {
  bucket = aws_s3_bucket.access_logs.id
  versioning_configuration {
    status = "Enabled"
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "access_logs" {
  bucket = aws_s3_bucket.access_logs.id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = "aws:kms"
      kms_master_key_id = aws_kms_key.data.arn
    }
    bucket_key_enabled = true
  }
}

resource "aws_s3_bucket_public_access_block" "access_logs" {
  bucket                  = aws_s3_bucket.access_logs.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_lifecycle_configuration" "access_logs" {
  bucket = aws_s3_bucket.access_logs.id
  rule {
    id     = "expire-logs"
    status = "Enabled"
    filter {}
    expiration {
      days = 365
    }
    noncurrent_version_expiration {
      noncurrent_days = var.noncurrent_version_retention_days
    }
    abort_incomplete_multipart_upload {
      days_after_initiation = 7
    }
  }
}

resource "aws_s3_bucket_policy" "access_logs" {
  bucket = aws_s3_bucket.access_logs.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "DenyInsecureTransport"
        Effect    = "Deny"
        Principal = "*"
        Action    = "s3:*"
        Resource  = [aws_s3_bucket.access_logs.arn, "${aws_s3_bucket.access_logs.arn}/*"]
        Condition = { Bool = { "aws:SecureTransport" = "false" } }
      },
      {
        Sid       = "S3ServerAccessLogs"
        Effect    = "Allow"
        Principal = { Service = "logging.s3.amazonaws.com" }
        Action    = "s3:PutObject"
        Resource  = "${aws_s3_bucket.access_logs.arn}/*"
        Condition = { StringEquals = { "aws:SourceAccount" = data.aws_caller_identity.current.account_id } }
      },
    ]
  })
}

# --- lake, checkpoints, artifacts -------------------------------------------------------------

resource "aws_s3_bucket" "this" {
  #checkov:skip=CKV_AWS_144:the lake is rebuildable from bronze and prod takes AWS Backup copies; cross-region replication doubles storage cost for no extra guarantee here
  #checkov:skip=CKV2_AWS_62:the jobs poll their tables; no consumer for S3 event notifications
  for_each      = local.buckets
  bucket        = each.value
  force_destroy = var.force_destroy
  tags          = merge(var.tags, { purpose = each.key })
}

resource "aws_s3_bucket_logging" "this" {
  for_each      = local.buckets
  bucket        = aws_s3_bucket.this[each.key].id
  target_bucket = aws_s3_bucket.access_logs.id
  target_prefix = "${each.key}/"
}

resource "aws_s3_bucket_versioning" "this" {
  for_each = local.buckets
  bucket   = aws_s3_bucket.this[each.key].id
  versioning_configuration {
    status = "Enabled"
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "this" {
  for_each = local.buckets
  bucket   = aws_s3_bucket.this[each.key].id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = "aws:kms"
      kms_master_key_id = aws_kms_key.data.arn
    }
    bucket_key_enabled = true
  }
}

resource "aws_s3_bucket_public_access_block" "this" {
  for_each                = local.buckets
  bucket                  = aws_s3_bucket.this[each.key].id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_policy" "tls_only" {
  for_each = local.buckets
  bucket   = aws_s3_bucket.this[each.key].id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid       = "DenyInsecureTransport"
      Effect    = "Deny"
      Principal = "*"
      Action    = "s3:*"
      Resource  = [aws_s3_bucket.this[each.key].arn, "${aws_s3_bucket.this[each.key].arn}/*"]
      Condition = { Bool = { "aws:SecureTransport" = "false" } }
    }]
  })
  depends_on = [aws_s3_bucket_public_access_block.this]
}

# One rule set for the three buckets: the quarantine and report prefixes only exist in the lake.
resource "aws_s3_bucket_lifecycle_configuration" "this" {
  #checkov:skip=CKV_AWS_300:S3 refuses an abort of incomplete uploads in a rule filtered by tag (expire-superseded-artifacts); the noncurrent-versions rule, filter {}, aborts them for the whole bucket after 7 days
  for_each = local.buckets
  bucket   = aws_s3_bucket.this[each.key].id

  # What the jobs delete (VACUUM, a republished report, a standby's rehearsal) leaves a delete
  # marker and a noncurrent version, recoverable for the retention; then both go.
  rule {
    id     = "noncurrent-versions"
    status = "Enabled"
    filter {}
    noncurrent_version_expiration {
      noncurrent_days = var.noncurrent_version_retention_days
    }
    expiration {
      expired_object_delete_marker = true
    }
    abort_incomplete_multipart_upload {
      days_after_initiation = 7
    }
  }

  # Each source's quarantine (a prefix of its own per source, terraform/platform's source_prefixes).
  dynamic "rule" {
    for_each = each.key == "lake" ? var.quarantine_prefixes : []
    content {
      id     = "quarantine-to-infrequent-access-${replace(trimsuffix(rule.value, "/"), "/", "-")}"
      status = "Enabled"
      filter {
        prefix = rule.value
      }
      transition {
        days          = var.quarantine_infrequent_access_days
        storage_class = "STANDARD_IA"
      }
      abort_incomplete_multipart_upload {
        days_after_initiation = 7
      }
    }
  }

  # The artifacts bucket's job code, conf and entry points are never overwritten (their keys name
  # their content): the upload that stops naming one copies it onto itself tagged superseded
  # (eo/cloud/artifact_store.py publish), and it expires this many days after that copy, its
  # creation date. Current ones carry no such tag; a job run started earlier keeps its files until then.
  dynamic "rule" {
    for_each = each.key == "artifacts" ? [var.superseded_artifact_retention_days] : []
    content {
      id     = "expire-superseded-artifacts"
      status = "Enabled"
      filter {
        tag {
          key   = "eo-artifact"
          value = "superseded"
        }
      }
      expiration {
        days = rule.value
      }
    }
  }

  rule {
    id     = "expire-old-reports"
    status = "Enabled"
    filter {
      prefix = var.reports_prefix
    }
    expiration {
      days = var.report_retention_days
    }
    abort_incomplete_multipart_upload {
      days_after_initiation = 7
    }
  }

  depends_on = [aws_s3_bucket_versioning.this]
}
