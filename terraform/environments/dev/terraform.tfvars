# The dev environment: what differs from prod. Use in the dev workspace of ../../platform:
#   terraform workspace select -or-create dev && terraform apply -var-file=../environments/dev/terraform.tfvars
# Names are global in S3: change "eo-dev" to something of your own before applying.
# The local-s3 environment (make demo ENV=local-s3) creates the same buckets on a local server.
environment               = "dev"
region                    = "eu-west-1"
lake_bucket_name          = "eo-dev-lake"
checkpoint_bucket_name    = "eo-dev-checkpoints"
artifacts_bucket_name     = "eo-dev-artifacts"
access_log_bucket_name    = "eo-dev-access-logs"
dags_bucket_name          = "airflow-eo-dev-dags"
log_store_table_name      = "eo-dev-delta-log"
vpc_cidr                  = "10.40.0.0/16"
availability_zones        = ["eu-west-1a", "eu-west-1b"]
single_nat_gateway        = true
max_vcpu                  = "8 vCPU"
max_memory                = "32 GB"
airflow_environment_class = "mw1.micro"
force_destroy             = true
