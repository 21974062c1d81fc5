variable "name_prefix" {
  type        = string
  description = "Prefix of every resource name, e.g. eo-dev."
}

variable "release_label" {
  type        = string
  description = "EMR Serverless release; the jars uploaded for it are resolved for this release (infra/maven/emr/pom.xml)."
}

variable "image_tag" {
  type        = string
  description = "Tag of the job image in this module's ECR repository (`make job-image` pushes it); empty until the first push (the stock image, which cannot run the jobs)."
  default     = ""
}

variable "kms_key_arn" {
  type        = string
  description = "KMS key encrypting the job image repository (the storage module's key)."
}

variable "force_destroy" {
  type        = bool
  description = "Let `terraform destroy` delete the job image repository with its images."
  default     = false
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
