variable "name_prefix" {
  type        = string
  description = "Prefix of every resource name, e.g. eo-dev."
}

variable "release_label" {
  type        = string
  description = "EMR Serverless release; the jars uploaded for it are resolved for this release (infra/maven/emr/pom.xml)."
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
  description = "Private subnets the job runs get network interfaces in (network module; to reach MSK)."
}

variable "security_group_ids" {
  type        = list(string)
  description = "Security groups of the job runs' network interfaces (the network module's EMR group)."
}

variable "tags" {
  type        = map(string)
  description = "Tags applied to every resource."
  default     = {}
}
