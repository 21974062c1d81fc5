# Names are global in S3: change "eo-dev" to something of your own before applying.
# The local-s3 environment (make demo ENV=local-s3) creates the same buckets on a local server.
region                    = "eu-west-1"
lake_bucket_name          = "eo-dev-lake"
checkpoint_bucket_name    = "eo-dev-checkpoints"
artifacts_bucket_name     = "eo-dev-artifacts"
access_log_bucket_name    = "eo-dev-access-logs"
dags_bucket_name          = "airflow-eo-dev-dags"
log_store_table_name      = "eo-dev-delta-log"
subnet_ids                = ["subnet-aaaaaaaaaaaaaaaaa", "subnet-bbbbbbbbbbbbbbbbb"]
security_group_ids        = ["sg-ccccccccccccccccc"]
max_vcpu                  = "8 vCPU"
max_memory                = "32 GB"
airflow_environment_class = "mw1.micro"
force_destroy             = true
