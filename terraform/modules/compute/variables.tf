variable "name_prefix" {
  type        = string
  description = "Prefix of every resource name, e.g. eo-dev."
}

variable "release_label" {
  type        = string
  description = "EMR Serverless release: emr-spark-8.0.0 is the first with Spark 4 (4.0.2) and Delta 4."
  default     = "emr-spark-8.0.0"
}

variable "image_uri" {
  type        = string
  description = "Optional custom image (ECR) built on the release's base image with the platform's Python packages; empty for the stock image."
  default     = ""
}

variable "max_vcpu" {
  type        = string
  description = "Upper bound of vCPUs all job runs of the application may use together, e.g. \"16 vCPU\"."
  default     = "16 vCPU"
}

variable "max_memory" {
  type        = string
  description = "Upper bound of memory all job runs may use together, e.g. \"64 GB\"."
  default     = "64 GB"
}

variable "idle_timeout_minutes" {
  type        = number
  description = "Minutes without job runs after which the application stops (the stream keeps it started)."
  default     = 15
}

variable "subnet_ids" {
  type        = list(string)
  description = "Private subnets the job runs get network interfaces in (to reach Kafka/MSK and PostgreSQL)."
}

variable "security_group_ids" {
  type        = list(string)
  description = "Security groups of the job runs' network interfaces."
}

variable "tags" {
  type        = map(string)
  description = "Tags applied to every resource."
  default     = {}
}
