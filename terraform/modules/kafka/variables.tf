variable "cluster_name" {
  type        = string
  description = "Name of the MSK Serverless cluster (part of every topic and group ARN)."
}

variable "subnet_ids" {
  type        = list(string)
  description = "Private subnets in two availability zones or more (from the network module)."
}

variable "security_group_ids" {
  type        = list(string)
  description = "Security groups of the cluster's interfaces: 9098 from the clients' groups only (network module)."
}

variable "tags" {
  type        = map(string)
  description = "Tags applied to every resource."
  default     = {}
}
