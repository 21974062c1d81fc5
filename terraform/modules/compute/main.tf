# The managed Spark runtime: an EMR Serverless application (see README for why). The same job
# modules are submitted to it as StartJobRun requests with spark-submit parameters.
resource "aws_emrserverless_application" "spark" {
  name          = "${var.name_prefix}-spark"
  release_label = var.release_label
  type          = "spark"
  architecture  = "X86_64"

  maximum_capacity {
    cpu    = var.max_vcpu
    memory = var.max_memory
  }

  auto_start_configuration {
    enabled = true
  }

  auto_stop_configuration {
    enabled              = true
    idle_timeout_minutes = var.idle_timeout_minutes
  }

  network_configuration {
    subnet_ids         = var.subnet_ids
    security_group_ids = var.security_group_ids
  }

  # The job image (eo/cloud/job_image.py: Python 3.11 and the jobs' packages on the release's base
  # image); until its first push (job_image_tag empty) the stock image, which cannot run the jobs.
  dynamic "image_configuration" {
    for_each = var.image_tag == "" ? [] : [var.image_tag]
    content {
      image_uri = "${aws_ecr_repository.job_image.repository_url}:${image_configuration.value}"
    }
  }

  # EMR checks at creation and update that it may pull the image.
  depends_on = [aws_ecr_repository_policy.job_image]

  # The Airflow role may only drive applications carrying this tag (modules/iam).
  tags = merge(var.tags, { platform = var.name_prefix })
}

# Where `make job-image` pushes the job image. Tags are immutable: a job run names exactly the
# image it was tested with.
resource "aws_ecr_repository" "job_image" {
  name                 = "${var.name_prefix}-spark-job"
  image_tag_mutability = "IMMUTABLE"
  force_delete         = var.force_destroy

  image_scanning_configuration {
    scan_on_push = true
  }

  encryption_configuration {
    encryption_type = "KMS"
    kms_key         = var.kms_key_arn
  }

  tags = var.tags
}

data "aws_caller_identity" "current" {}
data "aws_region" "current" {}

# EMR Serverless pulls the image for this account's applications only.
resource "aws_ecr_repository_policy" "job_image" {
  repository = aws_ecr_repository.job_image.name
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid       = "EmrServerlessPull"
      Effect    = "Allow"
      Principal = { Service = "emr-serverless.amazonaws.com" }
      Action    = ["ecr:BatchGetImage", "ecr:DescribeImages", "ecr:GetDownloadUrlForLayer"]
      Condition = {
        StringEquals = { "aws:SourceAccount" = data.aws_caller_identity.current.account_id }
        ArnLike = {
          "aws:SourceArn" = "arn:aws:emr-serverless:${data.aws_region.current.region}:${data.aws_caller_identity.current.account_id}:/applications/*"
        }
      }
    }]
  })
}

resource "aws_ecr_lifecycle_policy" "job_image" {
  repository = aws_ecr_repository.job_image.name
  policy = jsonencode({
    rules = [{
      rulePriority = 1
      description  = "untagged layers of replaced builds"
      selection    = { tagStatus = "untagged", countType = "sinceImagePushed", countUnit = "days", countNumber = 7 }
      action       = { type = "expire" }
    }]
  })
}
