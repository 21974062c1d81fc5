variable "region" {
  type        = string
  description = "AWS region of the environment."
}

variable "project" {
  type        = string
  description = "Project name, first part of every resource name."
  default     = "eo"
}

variable "lake_bucket_name" {
  type        = string
  description = "Bucket for the Delta tables and reports (globally unique)."
}

variable "checkpoint_bucket_name" {
  type        = string
  description = "Bucket for the streaming checkpoints (globally unique)."
}

variable "artifacts_bucket_name" {
  type        = string
  description = "Bucket for job code, jars and config (globally unique)."
}

variable "access_log_bucket_name" {
  type        = string
  description = "Bucket for S3 access logs (globally unique)."
}

variable "dags_bucket_name" {
  type        = string
  description = "MWAA DAGs bucket; must start with airflow- (globally unique)."
}

variable "log_store_table_name" {
  type        = string
  description = "DynamoDB table of Delta's S3 log store."
}

variable "emr_release_label" {
  type        = string
  description = "EMR Serverless release of the Spark runtime; must equal infra/maven/emr/pom.xml's emr.release.label."
}

variable "spark_image_uri" {
  type        = string
  description = "Custom EMR Serverless image (ECR URI) built on the release's base image with the jobs' Python packages; empty for the stock image."
  default     = ""
}

variable "vpc_cidr" {
  type        = string
  description = "IPv4 range of the environment's VPC (a /16, not overlapping networks it may be peered with)."
}

variable "availability_zones" {
  type        = list(string)
  description = "Availability zones of the region the subnets span (two at least)."
}

variable "single_nat_gateway" {
  type        = bool
  description = "One NAT gateway for all zones (cheaper) instead of one per zone."
}

variable "max_vcpu" {
  type        = string
  description = "Upper bound of vCPUs for all Spark job runs together."
}

variable "max_memory" {
  type        = string
  description = "Upper bound of memory for all Spark job runs together."
}

variable "airflow_environment_class" {
  type        = string
  description = "MWAA environment class."
}

variable "force_destroy" {
  type        = bool
  description = "Let terraform destroy delete non-empty buckets."
}
