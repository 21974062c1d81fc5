variable "name_prefix" {
  type        = string
  description = "Prefix of every resource name, e.g. eo-dev."
}

variable "emr_application_arn" {
  type        = string
  description = "ARN of the EMR Serverless application the Airflow role starts, watches and cancels job runs on."
}

variable "lake_bucket_arn" {
  type        = string
  description = "ARN of the lake bucket (tables and reports)."
}

variable "checkpoint_bucket_arn" {
  type        = string
  description = "ARN of the streaming checkpoints bucket."
}

variable "artifacts_bucket_arn" {
  type        = string
  description = "ARN of the artifacts bucket (job code, jars, config, job logs)."
}

variable "dags_bucket_arn" {
  type        = string
  description = "ARN of the MWAA DAGs bucket."
}

variable "log_store_table_arn" {
  type        = string
  description = "ARN of the Delta log store DynamoDB table."
}

variable "kms_key_arn" {
  type        = string
  description = "ARN of the KMS key encrypting buckets and table."
}

variable "kafka_cluster_arn" {
  type        = string
  description = "ARN of the MSK cluster (kafka-cluster:Connect)."
}

variable "kafka_topic_arn_prefix" {
  type        = string
  description = "Prefix of the MSK cluster's topic ARNs (kafka module): <prefix>/<topic>."
}

variable "kafka_group_arn_prefix" {
  type        = string
  description = "Prefix of the MSK cluster's consumer group ARNs (kafka module): <prefix>/<group id>."
}

variable "kafka_topics" {
  type        = list(string)
  description = "The topics the stream reads: one per declared source (eo/core/sources/*.schema.json x-topic)."

  validation {
    condition     = length(var.kafka_topics) > 0 && alltrue([for topic in var.kafka_topics : can(regex("^[A-Za-z0-9._-]{1,249}$", topic))])
    error_message = "At least one topic, each one Kafka topic name."
  }
}

variable "source_prefixes" {
  type        = list(string)
  description = "Each declared source's folder under the lake's and the reports' roots: \"\" for the clickstream, \"<source>/\" for the others (eo/runtime/config.py source_prefix)."
  default     = [""]

  validation {
    condition     = length(var.source_prefixes) > 0 && alltrue([for prefix in var.source_prefixes : can(regex("^([a-z][a-z0-9_]*/)?$", prefix))])
    error_message = "At least one prefix, each empty or a source name and /."
  }
}

variable "airflow_environment_name" {
  type        = string
  description = "Name of the MWAA environment (scopes its log groups and queues)."
}

variable "airflow_ui_allowed_cidrs" {
  type        = list(string)
  description = "Source CIDRs allowed to sign in to the Airflow UI; empty means any address."
  default     = []
}

variable "tags" {
  type        = map(string)
  description = "Tags applied to every resource."
  default     = {}
}
