# The application's cloud configuration comes from these outputs and nothing else, by name
# (conf/platform.toml's ${tf:name}; eo/cloud/outputs.py REQUIRED_OUTPUTS): in the environment's
# workspace, `terraform output -json > ../../conf/terraform-outputs/aws.json` (docs/cloud.md).

locals {
  # What the application reads (eo/cloud/outputs.py REQUIRED_OUTPUTS): these outputs, and the same
  # map uploaded next to the DAGs for their tasks on MWAA (main.tf, aws_s3_object.application_outputs).
  application_outputs = {
    region             = var.region
    lake_bucket        = module.storage.lake_bucket
    checkpoint_bucket  = module.storage.checkpoint_bucket
    artifacts_bucket   = module.storage.artifacts_bucket
    dags_bucket        = module.orchestration.dags_bucket
    log_store_table    = module.delta_log_store.table_name
    kms_key_arn        = module.storage.kms_key_arn
    spark_role_arn     = module.iam.spark_role_arn
    airflow_role_arn   = module.iam.airflow_role_arn
    emr_application_id = module.compute.application_id
    emr_release_label  = module.compute.release_label
    kafka_bootstrap    = module.kafka.bootstrap_brokers_sasl_iam
  }
}

output "region" {
  description = "AWS region of the environment."
  value       = local.application_outputs.region
}

output "lake_bucket" {
  description = "Delta tables under lake/, reports under reports/."
  value       = local.application_outputs.lake_bucket
}

output "checkpoint_bucket" {
  description = "Streaming checkpoints."
  value       = local.application_outputs.checkpoint_bucket
}

output "artifacts_bucket" {
  description = "Job code, jars, config, job logs."
  value       = local.application_outputs.artifacts_bucket
}

output "dags_bucket" {
  description = "MWAA DAGs bucket."
  value       = local.application_outputs.dags_bucket
}

output "log_store_table" {
  description = "DynamoDB table of Delta's S3 multi-cluster log store."
  value       = local.application_outputs.log_store_table
}

output "kms_key_arn" {
  description = "Data encryption key."
  value       = local.application_outputs.kms_key_arn
}

output "spark_role_arn" {
  description = "Execution role of Spark job runs."
  value       = local.application_outputs.spark_role_arn
}

output "airflow_role_arn" {
  description = "Execution role of the MWAA environment."
  value       = local.application_outputs.airflow_role_arn
}

output "emr_application_id" {
  description = "EMR Serverless application the jobs are submitted to."
  value       = local.application_outputs.emr_application_id
}

output "emr_release_label" {
  description = "EMR release of the application: the jobs' jars must be resolved for it (make jars-emr)."
  value       = local.application_outputs.emr_release_label
}

output "kafka_bootstrap" {
  description = "MSK Serverless bootstrap address for SASL/IAM clients (host:9098)."
  value       = local.application_outputs.kafka_bootstrap
}

output "kafka_cluster_arn" {
  description = "ARN of the MSK Serverless cluster."
  value       = module.kafka.cluster_arn
}

output "vpc_id" {
  description = "The platform's VPC: MSK is reachable from inside it only."
  value       = module.network.vpc_id
}

output "private_subnet_ids" {
  description = "Private subnets of the platform (a host for producers or operators goes here)."
  value       = module.network.private_subnet_ids
}

output "kafka_client_security_group_id" {
  description = "Security group MSK admits on 9098 (the EMR job runs'); give it to a producer or operator host in the VPC."
  value       = module.network.emr_security_group_id
}

output "airflow_webserver_url" {
  description = "Airflow UI: public or private, as airflow_ui_access says."
  value       = module.orchestration.webserver_url
}

output "airflow_ui_policy_arn" {
  description = "Attach it to the users or groups who sign in to the Airflow UI (from airflow_ui_allowed_cidrs, when set)."
  value       = module.iam.airflow_ui_policy_arn
}

output "job_image_repository_url" {
  description = "ECR repository `make job-image` pushes the job image to; set job_image_tag to the tag it pushed."
  value       = module.compute.job_image_repository_url
}
