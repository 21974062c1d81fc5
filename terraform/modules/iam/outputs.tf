output "spark_role_arn" {
  description = "Execution role of the Spark job runs."
  value       = aws_iam_role.spark.arn
}

output "airflow_role_arn" {
  description = "Execution role of the MWAA environment."
  value       = aws_iam_role.airflow.arn
}
