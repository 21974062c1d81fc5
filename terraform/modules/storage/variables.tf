variable "name_prefix" {
  type        = string
  description = "Prefix of every resource name, e.g. eo-dev."
}

variable "airflow_environment_name" {
  type        = string
  description = "Name of the MWAA environment, whose log groups (airflow-<name>-*) the key encrypts."
}

variable "lake_bucket_name" {
  type        = string
  description = "Bucket for the Delta tables (bronze, silver, gold, quarantine) and the verification reports."
}

variable "checkpoint_bucket_name" {
  type        = string
  description = "Bucket for the Structured Streaming checkpoints (one folder per query)."
}

variable "artifacts_bucket_name" {
  type        = string
  description = "Bucket for the job code (zip), the Maven-resolved jars and the platform config."
}

variable "access_log_bucket_name" {
  type        = string
  description = "Bucket receiving the S3 server access logs of the other buckets."
}

variable "quarantine_prefixes" {
  type        = list(string)
  description = "Key prefix of each source's quarantine table inside the lake bucket (lake/silver/quarantine/, lake/<source>/silver/quarantine/)."
  default     = ["lake/silver/quarantine/"]

  validation {
    condition     = length(var.quarantine_prefixes) > 0 && alltrue([for prefix in var.quarantine_prefixes : endswith(prefix, "/")])
    error_message = "At least one prefix, each ending in /."
  }
}

variable "reports_prefix" {
  type        = string
  description = "Key prefix of verification reports and Data Docs inside the lake bucket."
  default     = "reports/"
}

variable "quarantine_infrequent_access_days" {
  type        = number
  description = "Days after which quarantine files move to STANDARD_IA (they are read rarely)."
  default     = 30
}

variable "report_retention_days" {
  type        = number
  description = "Days after which verification reports are deleted."
  default     = 90
}

variable "noncurrent_version_retention_days" {
  type        = number
  description = "Days a replaced or deleted object version is kept (recovery window after a bad VACUUM or overwrite)."
  default     = 30
}

variable "force_destroy" {
  type        = bool
  description = "Allow terraform destroy to delete non-empty buckets (dev only)."
  default     = false
}

variable "tags" {
  type        = map(string)
  description = "Tags applied to every resource."
  default     = {}
}

variable "superseded_artifact_retention_days" {
  type        = number
  description = "Days a job artifact (code, conf, entry point, jar) is kept once an upload stopped naming it: a job run started before that upload (the stream) keeps fetching it until then."
  default     = 30
}
