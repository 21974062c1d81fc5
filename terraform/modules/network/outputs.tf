output "vpc_id" {
  description = "ID of the platform's VPC."
  value       = aws_vpc.this.id
}

output "private_subnet_ids" {
  description = "Private subnets, one per availability zone, for EMR Serverless, MWAA and MSK Serverless."
  value       = aws_subnet.private[*].id
}

output "emr_security_group_id" {
  description = "Security group of the EMR Serverless job runs (an MSK client)."
  value       = aws_security_group.emr.id
}

output "airflow_security_group_id" {
  description = "Security group of the MWAA environment (an MSK client; self-referencing as MWAA requires)."
  value       = aws_security_group.airflow.id
}

output "msk_security_group_id" {
  description = "Security group of MSK Serverless: 9098 from the EMR and Airflow groups only."
  value       = aws_security_group.msk.id
}
