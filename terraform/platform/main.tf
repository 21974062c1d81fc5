data "aws_region" "current" {}

# The whole platform: storage, the Delta log store, the network, Kafka (MSK Serverless), IAM,
# the Spark runtime and Airflow. environments/dev and environments/prod instantiate it with their
# own names and sizes.

module "storage" {
  source                 = "../modules/storage"
  name_prefix            = var.name_prefix
  lake_bucket_name       = var.lake_bucket_name
  checkpoint_bucket_name = var.checkpoint_bucket_name
  artifacts_bucket_name  = var.artifacts_bucket_name
  access_log_bucket_name = var.access_log_bucket_name
  force_destroy          = var.force_destroy
  tags                   = var.tags
}

module "delta_log_store" {
  source      = "../modules/delta_log_store"
  table_name  = var.log_store_table_name
  kms_key_arn = module.storage.kms_key_arn
  tags        = var.tags
}

module "network" {
  source             = "../modules/network"
  name_prefix        = var.name_prefix
  cidr_block         = var.vpc_cidr
  availability_zones = var.availability_zones
  single_nat_gateway = var.single_nat_gateway
  kms_key_arn        = module.storage.kms_key_arn
  tags               = var.tags
}

module "kafka" {
  source             = "../modules/kafka"
  cluster_name       = "${var.name_prefix}-kafka"
  subnet_ids         = module.network.private_subnet_ids
  security_group_ids = [module.network.msk_security_group_id]
  tags               = var.tags
}

module "iam" {
  source                   = "../modules/iam"
  name_prefix              = var.name_prefix
  lake_bucket_arn          = module.storage.bucket_arns["lake"]
  checkpoint_bucket_arn    = module.storage.bucket_arns["checkpoints"]
  artifacts_bucket_arn     = module.storage.bucket_arns["artifacts"]
  dags_bucket_arn          = "arn:aws:s3:::${var.dags_bucket_name}"
  log_store_table_arn      = module.delta_log_store.table_arn
  kms_key_arn              = module.storage.kms_key_arn
  kafka_cluster_arn        = module.kafka.cluster_arn
  kafka_topic_arn_prefix   = module.kafka.topic_arn_prefix
  kafka_group_arn_prefix   = module.kafka.group_arn_prefix
  kafka_topic              = var.kafka_topic
  airflow_environment_name = "${var.name_prefix}-airflow"
  tags                     = var.tags
}

module "compute" {
  source             = "../modules/compute"
  name_prefix        = var.name_prefix
  release_label      = var.emr_release_label
  image_uri          = var.spark_image_uri
  max_vcpu           = var.max_vcpu
  max_memory         = var.max_memory
  subnet_ids         = module.network.private_subnet_ids
  security_group_ids = [module.network.emr_security_group_id]
  tags               = var.tags
}

module "orchestration" {
  source                        = "../modules/orchestration"
  name_prefix                   = var.name_prefix
  environment_name              = "${var.name_prefix}-airflow"
  dags_bucket_name              = var.dags_bucket_name
  access_log_bucket_name        = var.access_log_bucket_name
  environment_class             = var.airflow_environment_class
  execution_role_arn            = module.iam.airflow_role_arn
  kms_key_arn                   = module.storage.kms_key_arn
  requirements_file             = var.requirements_file
  subnet_ids                    = slice(module.network.private_subnet_ids, 0, 2) # MWAA takes exactly two
  security_group_ids            = [module.network.airflow_security_group_id]
  force_destroy                 = var.force_destroy
  airflow_configuration_options = { "core.default_timezone" = "utc" }
  # The one environment switch: EO_ENV=aws makes the DAGs' Spark operator submit to EMR Serverless.
  environment_variables = { EO_ENV = "aws", EO_AWS_REGION = data.aws_region.current.region }
  tags                  = var.tags
}
