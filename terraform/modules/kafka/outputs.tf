output "bootstrap_brokers_sasl_iam" {
  description = "Bootstrap address for SASL/IAM clients (host:9098): the application's kafka_bootstrap."
  value       = data.aws_msk_bootstrap_brokers.this.bootstrap_brokers_sasl_iam
}

output "cluster_arn" {
  description = "ARN of the cluster (kafka-cluster:Connect and other cluster actions)."
  value       = aws_msk_serverless_cluster.this.arn
}

output "topic_arn_prefix" {
  description = "Prefix of the cluster's topic ARNs: <prefix>/<topic name>."
  value       = local.topic_arn_prefix
}

output "group_arn_prefix" {
  description = "Prefix of the cluster's consumer group ARNs: <prefix>/<group id>."
  value       = local.group_arn_prefix
}
