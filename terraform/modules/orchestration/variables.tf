variable "name_prefix" {
  type        = string
  description = "Prefix of every resource name, e.g. eo-dev."
}

variable "environment_name" {
  type        = string
  description = "Name of the MWAA environment."
}

variable "dags_bucket_name" {
  type        = string
  description = "Bucket MWAA reads DAGs and requirements.txt from; MWAA requires the airflow- prefix."

  validation {
    condition     = startswith(var.dags_bucket_name, "airflow-")
    error_message = "MWAA only reads source buckets whose name starts with airflow-."
  }
}

variable "access_log_bucket_name" {
  type        = string
  description = "Bucket receiving the DAGs bucket's S3 access logs (from the storage module)."
}

variable "airflow_version" {
  type        = string
  description = "Airflow version of the MWAA environment (the DAGs use Airflow 3 APIs): the platform passes infra/cloud-versions.json's."
}

variable "environment_class" {
  type        = string
  description = "MWAA environment class: mw1.micro, mw1.small, mw1.medium, ..."
  default     = "mw1.small"
}

variable "max_workers" {
  type        = number
  description = "Upper bound of Celery workers (Spark runs elsewhere: workers only submit and wait)."
  default     = 2
}

variable "execution_role_arn" {
  type        = string
  description = "MWAA execution role (from the iam module)."
}

variable "kms_key_arn" {
  type        = string
  description = "KMS key encrypting the DAGs bucket and the environment."
}

variable "requirements_file" {
  type        = string
  description = "Local path of the requirements.txt uploaded next to the DAGs."
}

variable "subnet_ids" {
  type        = list(string)
  description = "Two private subnets in different availability zones for the environment."
}

variable "security_group_ids" {
  type        = list(string)
  description = "Security groups of the environment."
}

variable "airflow_configuration_options" {
  type        = map(string)
  description = "Extra airflow.cfg options (section.key = value)."
  default     = {}
}

variable "environment_variables" {
  type        = map(string)
  description = "Variables exported to every Airflow process by the environment's startup script."
  default     = {}
}

variable "force_destroy" {
  type        = bool
  description = "Allow terraform destroy to delete a non-empty DAGs bucket (dev only)."
  default     = false
}

variable "tags" {
  type        = map(string)
  description = "Tags applied to every resource."
  default     = {}
}

variable "webserver_access_mode" {
  type        = string
  description = "PUBLIC_ONLY (an AWS-hosted endpoint, sign-in through IAM) or PRIVATE_ONLY (from inside the VPC)."
  default     = "PRIVATE_ONLY"

  validation {
    condition     = contains(["PUBLIC_ONLY", "PRIVATE_ONLY"], var.webserver_access_mode)
    error_message = "webserver_access_mode is PUBLIC_ONLY or PRIVATE_ONLY."
  }
}

variable "repo_root" {
  type        = string
  description = "Path of the repository checkout the DAGs, packages and configuration are uploaded from."
}

variable "dags_folder" {
  type        = string
  description = "Local folder of the DAG files (the repository's dags/)."
}

variable "plugins_folder" {
  type        = string
  description = "Local folder of the Airflow plugins, zipped into plugins.zip (the repository's plugins/)."
}

variable "packages" {
  type        = list(string)
  description = "Folders of the repository the DAGs' tasks import, uploaded next to the DAGs."
  default     = ["eo", "batch", "streaming", "ops", "producer", "infra"]
}
