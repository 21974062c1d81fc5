# Passed through from the platform: the application reads them (conf/terraform-outputs/<env>.json).
output "lake_bucket" {
  description = "Delta tables under lake/, reports under reports/."
  value       = module.platform.lake_bucket
}

output "checkpoint_bucket" {
  description = "Streaming checkpoints."
  value       = module.platform.checkpoint_bucket
}

output "artifacts_bucket" {
  description = "Job code, jars, config, job logs."
  value       = module.platform.artifacts_bucket
}

output "dags_bucket" {
  description = "MWAA DAGs bucket."
  value       = module.platform.dags_bucket
}

output "log_store_table" {
  description = "DynamoDB table of Delta's S3 log store."
  value       = module.platform.log_store_table
}

output "kms_key_arn" {
  description = "Data encryption key."
  value       = module.platform.kms_key_arn
}

output "spark_role_arn" {
  description = "Execution role of Spark job runs."
  value       = module.platform.spark_role_arn
}

output "airflow_role_arn" {
  description = "Execution role of the MWAA environment."
  value       = module.platform.airflow_role_arn
}

output "emr_application_id" {
  description = "EMR Serverless application the jobs are submitted to."
  value       = module.platform.emr_application_id
}

output "emr_release_label" {
  description = "EMR release of the application (the jars are resolved for it)."
  value       = module.platform.emr_release_label
}

output "kafka_bootstrap" {
  description = "MSK Serverless bootstrap address for SASL/IAM clients."
  value       = module.platform.kafka_bootstrap
}

output "kafka_cluster_arn" {
  description = "ARN of the MSK Serverless cluster."
  value       = module.platform.kafka_cluster_arn
}

output "vpc_id" {
  description = "The environment's VPC."
  value       = module.platform.vpc_id
}

output "private_subnet_ids" {
  description = "Private subnets of the environment."
  value       = module.platform.private_subnet_ids
}

output "kafka_client_security_group_id" {
  description = "Security group MSK admits on 9098, for a producer or operator host in the VPC."
  value       = module.platform.kafka_client_security_group_id
}

output "airflow_webserver_url" {
  description = "Airflow UI (private)."
  value       = module.platform.airflow_webserver_url
}

output "region" {
  description = "AWS region of the environment."
  value       = var.region
}
