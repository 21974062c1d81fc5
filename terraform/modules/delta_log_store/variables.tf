variable "table_name" {
  type        = string
  description = "Name of the DynamoDB table Delta's S3DynamoDBLogStore coordinates commits in."
}

variable "kms_key_arn" {
  type        = string
  description = "KMS key encrypting the table."
}

variable "tags" {
  type        = map(string)
  description = "Tags applied to every resource."
  default     = {}
}
