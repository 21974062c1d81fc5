# Delta's multi-cluster S3 log store: S3 has no put-if-absent for the log, so concurrent writers
# (the streaming job, a backfill writing live gold, maintenance) agree on the next commit file
# through a conditional write in this table. Key schema and TTL attribute are the ones
# io.delta.storage.S3DynamoDBLogStore expects.
resource "aws_dynamodb_table" "log_store" {
  name         = var.table_name
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "tablePath"
  range_key    = "fileName"

  attribute {
    name = "tablePath"
    type = "S"
  }

  attribute {
    name = "fileName"
    type = "S"
  }

  ttl {
    attribute_name = "expireTime"
    enabled        = true
  }

  point_in_time_recovery {
    enabled = true
  }

  server_side_encryption {
    enabled     = true
    kms_key_arn = var.kms_key_arn
  }

  deletion_protection_enabled = true
  tags                        = var.tags
}
