output "spark_role_arn" {
  description = "Execution role of the Spark job runs."
  value       = aws_iam_role.spark.arn
}

output "airflow_role_arn" {
  description = "Execution role of the MWAA environment."
  value       = aws_iam_role.airflow.arn
}

output "airflow_ui_policy_arn" {
  description = "Policy to attach to the users or groups who sign in to the Airflow UI."
  value       = aws_iam_policy.airflow_ui.arn
}
