# No default: every environment chooses (../environments/<env>/terraform.tfvars sets it; a test checks).
# A default: one value for every environment, set in a tfvars only where an environment differs.

variable "environment" {
  type        = string
  description = "Environment name (dev, prod): second part of every resource name, a default tag, and the workspace that keys the state."

  validation {
    condition     = can(regex("^[a-z][a-z0-9]{1,11}$", var.environment)) && var.environment != "default"
    error_message = "A short lowercase name such as dev or prod."
  }

  validation {
    condition     = var.environment == terraform.workspace
    error_message = "These tfvars are for ${var.environment}, the selected workspace (the state) is ${terraform.workspace}: run `terraform workspace select -or-create ${var.environment}`, or pass the tfvars of ${terraform.workspace}."
  }
}

variable "project" {
  type        = string
  description = "Project name, first part of every resource name, a default tag."
  default     = "eo"
}

variable "region" {
  type        = string
  description = "AWS region of the environment."
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
  description = "Bucket for the S3 access logs of the others (globally unique)."
}

variable "dags_bucket_name" {
  type        = string
  description = "MWAA source bucket; its name must start with airflow- (globally unique)."
}

variable "log_store_table_name" {
  type        = string
  description = "DynamoDB table of Delta's S3 multi-cluster log store."
}

variable "vpc_cidr" {
  type        = string
  description = "IPv4 range of the environment's VPC (a /16, not overlapping networks it may be peered with)."
}

variable "availability_zones" {
  type        = list(string)
  description = "Availability zones of the region the subnets span (two at least; MWAA uses the first two)."
}

variable "single_nat_gateway" {
  type        = bool
  description = "One NAT gateway shared by all zones (cheaper, dev) instead of one per zone (prod)."
}

variable "max_vcpu" {
  type        = string
  description = "Upper bound of vCPUs for all Spark job runs together."
}

variable "max_memory" {
  type        = string
  description = "Upper bound of memory for all Spark job runs together."
}

variable "airflow_ui_access" {
  type        = string
  description = "How users reach the Airflow UI: public (an AWS-hosted endpoint, sign-in through IAM, limited to airflow_ui_allowed_cidrs) or private (only from inside the VPC: a VPN, Direct Connect or an SSH tunnel through a bastion; docs/cloud.md)."
  default     = "private"

  validation {
    condition     = contains(["public", "private"], var.airflow_ui_access)
    error_message = "airflow_ui_access is public or private."
  }
}

variable "airflow_ui_allowed_cidrs" {
  type        = list(string)
  description = "Source CIDRs from which the airflow_ui_policy lets a user sign in to the UI (aws:SourceIp); empty means any address, which a public UI should not have."
  default     = []

  validation {
    condition     = alltrue([for cidr in var.airflow_ui_allowed_cidrs : can(cidrnetmask(cidr))])
    error_message = "Every entry of airflow_ui_allowed_cidrs is an IPv4 CIDR, e.g. 203.0.113.0/24."
  }
}

variable "airflow_environment_class" {
  type        = string
  description = "MWAA environment class."
}

variable "force_destroy" {
  type        = bool
  description = "Let terraform destroy delete non-empty buckets (dev only)."
}

variable "job_image_tag" {
  type        = string
  description = "Tag of the job image `make job-image` pushed to the job_image_repository_url output; empty before the first push (the stock image cannot run the jobs)."
  default     = ""
}

variable "tags" {
  type        = map(string)
  description = "Tags applied to every resource, besides the provider's default tags (project, environment, managed_by)."
  default     = {}
}
