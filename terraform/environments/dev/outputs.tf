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

output "airflow_webserver_url" {
  description = "Airflow UI (private)."
  value       = module.platform.airflow_webserver_url
}

output "region" {
  description = "AWS region of the environment."
  value       = var.region
}
