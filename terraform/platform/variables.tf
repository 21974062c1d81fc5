variable "name_prefix" {
  type        = string
  description = "Prefix of every resource name: <project>-<environment>."
}

variable "lake_bucket_name" {
  type        = string
  description = "Bucket for the Delta tables and reports."
}

variable "checkpoint_bucket_name" {
  type        = string
  description = "Bucket for the streaming checkpoints."
}

variable "artifacts_bucket_name" {
  type        = string
  description = "Bucket for job code, jars and config."
}

variable "access_log_bucket_name" {
  type        = string
  description = "Bucket for the S3 access logs of the others."
}

variable "dags_bucket_name" {
  type        = string
  description = "MWAA source bucket (name must start with airflow-)."
}

variable "log_store_table_name" {
  type        = string
  description = "DynamoDB table of Delta's S3 multi-cluster log store."
}

variable "vpc_cidr" {
  type        = string
  description = "IPv4 range of the platform's VPC (a /16)."
}

variable "availability_zones" {
  type        = list(string)
  description = "Availability zones the subnets span (two at least; MWAA uses the first two)."
}

variable "single_nat_gateway" {
  type        = bool
  description = "One NAT gateway shared by all zones (dev) instead of one per zone (prod)."
  default     = false
}

variable "kafka_topic" {
  type        = string
  description = "The topic the stream reads: conf/platform.toml's topic for the aws environment (a test checks)."
  default     = "clickstream"
}

variable "emr_release_label" {
  type        = string
  description = "EMR Serverless release of the Spark runtime; must equal infra/maven/emr/pom.xml's emr.release.label (a test checks)."
}

variable "spark_image_uri" {
  type        = string
  description = "Custom EMR Serverless image with the platform's Python packages, or empty."
  default     = ""
}

variable "max_vcpu" {
  type        = string
  description = "Upper bound of vCPUs for all Spark job runs together."
  default     = "16 vCPU"
}

variable "max_memory" {
  type        = string
  description = "Upper bound of memory for all Spark job runs together."
  default     = "64 GB"
}

variable "airflow_environment_class" {
  type        = string
  description = "MWAA environment class."
  default     = "mw1.small"
}

variable "requirements_file" {
  type        = string
  description = "requirements.txt uploaded for MWAA."
}

variable "force_destroy" {
  type        = bool
  description = "Let terraform destroy delete non-empty buckets (dev only)."
  default     = false
}

variable "tags" {
  type        = map(string)
  description = "Tags applied to every resource."
  default     = {}
}
