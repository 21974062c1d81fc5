variable "name_prefix" {
  type        = string
  description = "Prefix of every resource name, e.g. eo-dev."
}

variable "cidr_block" {
  type        = string
  description = "IPv4 range of the VPC (a /16: private subnets are /20s carved from it)."
  default     = "10.40.0.0/16"
}

variable "availability_zones" {
  type        = list(string)
  description = "Availability zones of the subnets, named so the set never grows by itself; MWAA uses the first two."

  validation {
    condition     = length(var.availability_zones) >= 2 && length(var.availability_zones) <= 6
    error_message = "Two to six availability zones: MWAA and MSK Serverless need subnets in two at least."
  }
}

variable "single_nat_gateway" {
  type        = bool
  description = "One NAT gateway for all zones (cheaper, dev) instead of one per zone (zone-independent, prod)."
  default     = false
}

variable "interface_endpoints" {
  type        = set(string)
  description = "AWS services reached through interface endpoints instead of the NAT (short names: sts, logs, ...)."
  default     = ["sts", "logs"]
}

variable "flow_log_retention_days" {
  type        = number
  description = "Days the VPC flow logs are kept."
  default     = 365
}

variable "kms_key_arn" {
  type        = string
  description = "KMS key encrypting the flow logs (the storage module's data key)."
}

variable "tags" {
  type        = map(string)
  description = "Tags applied to every resource."
  default     = {}
}
