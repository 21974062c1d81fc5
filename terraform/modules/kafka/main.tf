# The platform's Kafka: an MSK Serverless cluster in the private subnets. MSK Serverless speaks
# SASL/IAM only (port 9098, TLS): clients authenticate with their IAM role and are authorized by
# kafka-cluster:* actions on the cluster, topic and group ARNs (modules/iam), the network module's
# security group admits the EMR and Airflow groups only. Topics are created through the Kafka API
# (eo.runtime.kafka_admin.ensure_topic), with the cluster's fixed replication.
resource "aws_msk_serverless_cluster" "this" {
  cluster_name = var.cluster_name

  vpc_config {
    subnet_ids         = var.subnet_ids
    security_group_ids = var.security_group_ids
  }

  client_authentication {
    sasl {
      iam {
        enabled = true
      }
    }
  }

  tags = var.tags
}

data "aws_msk_bootstrap_brokers" "this" {
  cluster_arn = aws_msk_serverless_cluster.this.arn
}

locals {
  # arn:aws:kafka:<region>:<account>:cluster/<name>/<uuid>: topics and groups live under the same name/uuid.
  topic_arn_prefix = replace(aws_msk_serverless_cluster.this.arn, ":cluster/", ":topic/")
  group_arn_prefix = replace(aws_msk_serverless_cluster.this.arn, ":cluster/", ":group/")
}
