output "lake_bucket" {
  description = "Name of the lake bucket (Delta tables under lake/, reports under reports/)."
  value       = aws_s3_bucket.this["lake"].id
}

output "checkpoint_bucket" {
  description = "Name of the streaming checkpoints bucket."
  value       = aws_s3_bucket.this["checkpoints"].id
}

output "artifacts_bucket" {
  description = "Name of the bucket holding job code, jars and config."
  value       = aws_s3_bucket.this["artifacts"].id
}

output "bucket_arns" {
  description = "ARNs of the lake, checkpoints and artifacts buckets, by purpose."
  value       = { for k, b in aws_s3_bucket.this : k => b.arn }
}

output "kms_key_arn" {
  description = "ARN of the KMS key encrypting the buckets and the log store table."
  value       = aws_kms_key.data.arn
}
