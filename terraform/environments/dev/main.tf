# The dev environment: the platform with dev names and sizes, state in S3 with native locking.
# terraform init -backend-config=backend.hcl && terraform plan && terraform apply

terraform {
  backend "s3" {
    key          = "effectively-once/dev/terraform.tfstate"
    encrypt      = true
    use_lockfile = true # S3 conditional writes lock the state; no lock table needed
  }
}

provider "aws" {
  region = var.region
  default_tags {
    tags = { project = var.project, environment = "dev", managed_by = "terraform" }
  }
}

module "platform" {
  source                    = "../../platform"
  name_prefix               = "${var.project}-dev"
  lake_bucket_name          = var.lake_bucket_name
  checkpoint_bucket_name    = var.checkpoint_bucket_name
  artifacts_bucket_name     = var.artifacts_bucket_name
  access_log_bucket_name    = var.access_log_bucket_name
  dags_bucket_name          = var.dags_bucket_name
  log_store_table_name      = var.log_store_table_name
  emr_release_label         = var.emr_release_label
  spark_image_uri           = var.spark_image_uri
  vpc_cidr                  = var.vpc_cidr
  availability_zones        = var.availability_zones
  single_nat_gateway        = var.single_nat_gateway
  max_vcpu                  = var.max_vcpu
  max_memory                = var.max_memory
  airflow_environment_class = var.airflow_environment_class
  requirements_file         = "${path.module}/../../mwaa-requirements.txt"
  force_destroy             = var.force_destroy
}
