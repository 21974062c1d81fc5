output "table_name" {
  description = "Name of the log store table (spark.io.delta.storage.S3DynamoDBLogStore.ddb.tableName)."
  value       = aws_dynamodb_table.log_store.name
}

output "table_arn" {
  description = "ARN of the log store table, for IAM policies."
  value       = aws_dynamodb_table.log_store.arn
}
