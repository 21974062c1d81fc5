output "dags_bucket" {
  description = "Bucket to upload dags/ into (under dags/)."
  value       = aws_s3_bucket.dags.id
}

output "dags_bucket_arn" {
  description = "ARN of the DAGs bucket."
  value       = aws_s3_bucket.dags.arn
}

output "webserver_url" {
  description = "URL of the Airflow UI (private: reach it through the VPC)."
  value       = aws_mwaa_environment.this.webserver_url
}
