# The application's cloud configuration comes from these outputs and nothing else:
# `terraform output -json > ../../../conf/terraform-outputs/<env>.json` (see README, deploy guide).

output "lake_bucket" {
  description = "Delta tables under lake/, reports under reports/."
  value       = module.storage.lake_bucket
}

output "checkpoint_bucket" {
  description = "Streaming checkpoints."
  value       = module.storage.checkpoint_bucket
}

output "artifacts_bucket" {
  description = "Job code, jars, config, job logs."
  value       = module.storage.artifacts_bucket
}

output "dags_bucket" {
  description = "MWAA DAGs bucket."
  value       = module.orchestration.dags_bucket
}

output "log_store_table" {
  description = "DynamoDB table of Delta's S3 multi-cluster log store."
  value       = module.delta_log_store.table_name
}

output "kms_key_arn" {
  description = "Data encryption key."
  value       = module.storage.kms_key_arn
}

output "spark_role_arn" {
  description = "Execution role of Spark job runs."
  value       = module.iam.spark_role_arn
}

output "airflow_role_arn" {
  description = "Execution role of the MWAA environment."
  value       = module.iam.airflow_role_arn
}

output "emr_application_id" {
  description = "EMR Serverless application the jobs are submitted to."
  value       = module.compute.application_id
}

output "airflow_webserver_url" {
  description = "Airflow UI (private)."
  value       = module.orchestration.webserver_url
}
