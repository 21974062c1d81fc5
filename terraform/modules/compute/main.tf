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

  dynamic "image_configuration" {
    for_each = var.image_uri == "" ? [] : [var.image_uri]
    content {
      image_uri = image_configuration.value
    }
  }

  # The Airflow role may only drive applications carrying this tag (modules/iam).
  tags = merge(var.tags, { platform = var.name_prefix })
}
