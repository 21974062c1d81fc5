output "application_id" {
  description = "EMR Serverless application id (StartJobRun's --application-id)."
  value       = aws_emrserverless_application.spark.id
}

output "application_arn" {
  description = "EMR Serverless application ARN."
  value       = aws_emrserverless_application.spark.arn
}

output "release_label" {
  description = "EMR release the application runs: the one the uploaded jars must be resolved for."
  value       = aws_emrserverless_application.spark.release_label
}

output "job_image_repository_url" {
  description = "ECR repository of the job image (`make job-image` pushes to it)."
  value       = aws_ecr_repository.job_image.repository_url
}
