# The prod environment: what differs from dev. Use in the prod workspace of ../../platform:
#   terraform workspace select -or-create prod && terraform apply -var-file=../environments/prod/terraform.tfvars
# Names are global in S3: change "eo-prod" to something of your own before applying.
environment               = "prod"
region                    = "eu-west-1"
lake_bucket_name          = "eo-prod-lake"
checkpoint_bucket_name    = "eo-prod-checkpoints"
artifacts_bucket_name     = "eo-prod-artifacts"
access_log_bucket_name    = "eo-prod-access-logs"
dags_bucket_name          = "airflow-eo-prod-dags"
log_store_table_name      = "eo-prod-delta-log"
vpc_cidr                  = "10.50.0.0/16"
availability_zones        = ["eu-west-1a", "eu-west-1b", "eu-west-1c"]
single_nat_gateway        = false
max_vcpu                  = "32 vCPU"
max_memory                = "128 GB"
airflow_environment_class = "mw1.small"
force_destroy             = false
