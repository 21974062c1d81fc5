# The whole platform, and the one root: storage, the Delta log store, the network, Kafka (MSK
# Serverless), IAM, the Spark runtime and Airflow. An environment is a workspace (its state) and
# ../environments/<env>/terraform.tfvars (its names and sizes); nothing else differs:
#
#   terraform init -backend-config=backend.hcl
#   terraform workspace select -or-create dev
#   terraform apply -var-file=../environments/dev/terraform.tfvars

locals {
  name_prefix       = "${var.project}-${var.environment}"
  requirements_file = "${path.module}/../mwaa-requirements.txt"
  repo_root         = abspath("${path.module}/../..")
  # The versions the cloud runs, written once (eo/cloud/versions.py reads the same file).
  versions      = jsondecode(file("${local.repo_root}/infra/cloud-versions.json"))
  artifacts_dir = "${local.repo_root}/build/artifacts" # make artifacts
  eo_env        = "aws"                                # conf/platform.toml's environment on AWS
  # MWAA names its log groups after it: the KMS key and the Airflow role cover airflow-<this>-*.
  airflow_environment_name = "${local.name_prefix}-airflow"
  # The sources are declarations (eo/core/sources/<name>.schema.json): each names its Kafka topic,
  # which the roles may read. A new declaration is a new grant; nothing here names a source.
  source_files = fileset("${local.repo_root}/eo/core/sources", "*.schema.json")
  sources      = { for f in local.source_files : trimsuffix(f, ".schema.json") => jsondecode(file("${local.repo_root}/eo/core/sources/${f}")) }
  kafka_topics = sort(distinct([for source in values(local.sources) : source["x-topic"]]))
  # Each source's folder of the lake and of the reports: the clickstream's the roots themselves,
  # every other source's a prefix of its own (eo/runtime/config.py source_prefix).
  source_prefixes = sort([for name in keys(local.sources) : name == "clicks" ? "" : "${name}/"])
  # The manifests `make artifacts` writes: which jars, code, conf and entry points are current.
  artifact_manifests = ["jars/manifest.json", "manifests/application.json"]
}

provider "aws" {
  region = var.region
  default_tags {
    tags = { project = var.project, environment = var.environment, managed_by = "terraform" }
  }
}

module "storage" {
  source                   = "../modules/storage"
  name_prefix              = local.name_prefix
  airflow_environment_name = local.airflow_environment_name
  lake_bucket_name         = var.lake_bucket_name
  checkpoint_bucket_name   = var.checkpoint_bucket_name
  artifacts_bucket_name    = var.artifacts_bucket_name
  access_log_bucket_name   = var.access_log_bucket_name
  quarantine_prefixes      = [for prefix in local.source_prefixes : "lake/${prefix}silver/quarantine/"]
  force_destroy            = var.force_destroy
  tags                     = var.tags
}

module "delta_log_store" {
  source      = "../modules/delta_log_store"
  table_name  = var.log_store_table_name
  kms_key_arn = module.storage.kms_key_arn
  tags        = var.tags
}

module "network" {
  source             = "../modules/network"
  name_prefix        = local.name_prefix
  cidr_block         = var.vpc_cidr
  availability_zones = var.availability_zones
  single_nat_gateway = var.single_nat_gateway
  kms_key_arn        = module.storage.kms_key_arn
  tags               = var.tags
}

module "kafka" {
  source             = "../modules/kafka"
  cluster_name       = "${local.name_prefix}-kafka"
  subnet_ids         = module.network.private_subnet_ids
  security_group_ids = [module.network.msk_security_group_id]
  tags               = var.tags
}

module "iam" {
  source                   = "../modules/iam"
  name_prefix              = local.name_prefix
  lake_bucket_arn          = module.storage.bucket_arns["lake"]
  checkpoint_bucket_arn    = module.storage.bucket_arns["checkpoints"]
  artifacts_bucket_arn     = module.storage.bucket_arns["artifacts"]
  dags_bucket_arn          = "arn:aws:s3:::${var.dags_bucket_name}"
  log_store_table_arn      = module.delta_log_store.table_arn
  emr_application_arn      = module.compute.application_arn
  kms_key_arn              = module.storage.kms_key_arn
  kafka_cluster_arn        = module.kafka.cluster_arn
  kafka_topic_arn_prefix   = module.kafka.topic_arn_prefix
  kafka_group_arn_prefix   = module.kafka.group_arn_prefix
  kafka_topics             = local.kafka_topics
  source_prefixes          = local.source_prefixes
  airflow_environment_name = local.airflow_environment_name
  airflow_ui_allowed_cidrs = var.airflow_ui_allowed_cidrs
  tags                     = var.tags
}

module "compute" {
  source             = "../modules/compute"
  name_prefix        = local.name_prefix
  release_label      = local.versions.emr_release
  image_tag          = var.job_image_tag
  kms_key_arn        = module.storage.kms_key_arn
  force_destroy      = var.force_destroy
  max_vcpu           = var.max_vcpu
  max_memory         = var.max_memory
  subnet_ids         = module.network.private_subnet_ids
  security_group_ids = [module.network.emr_security_group_id]
  tags               = var.tags
}

module "orchestration" {
  source                        = "../modules/orchestration"
  name_prefix                   = local.name_prefix
  environment_name              = local.airflow_environment_name
  webserver_access_mode         = var.airflow_ui_access == "public" ? "PUBLIC_ONLY" : "PRIVATE_ONLY"
  dags_bucket_name              = var.dags_bucket_name
  access_log_bucket_name        = var.access_log_bucket_name
  environment_class             = var.airflow_environment_class
  airflow_version               = local.versions.airflow
  execution_role_arn            = module.iam.airflow_role_arn
  kms_key_arn                   = module.storage.kms_key_arn
  requirements_file             = local.requirements_file
  repo_root                     = local.repo_root
  dags_folder                   = "${local.repo_root}/dags"
  plugins_folder                = "${local.repo_root}/plugins"
  subnet_ids                    = slice(module.network.private_subnet_ids, 0, 2) # MWAA takes exactly two
  security_group_ids            = [module.network.airflow_security_group_id]
  force_destroy                 = var.force_destroy
  airflow_configuration_options = { "core.default_timezone" = "utc" }
  # The one environment switch: EO_ENV=aws makes the DAGs' Spark operator submit to EMR Serverless.
  environment_variables = { EO_ENV = local.eo_env, EO_AWS_REGION = var.region }
  tags                  = var.tags
}

# The outputs the tasks read, where they read them on MWAA (conf/terraform-outputs/<EO_ENV>.json
# beside the DAGs; eo/runtime/tf_outputs.py takes a flat map): no `terraform output` copied by hand.
resource "aws_s3_object" "application_outputs" {
  bucket       = module.orchestration.dags_bucket
  key          = "dags/conf/terraform-outputs/${local.eo_env}.json"
  content      = jsonencode(local.application_outputs)
  content_type = "application/json"
}

# The job runs' artifacts as `make artifacts` built them (eo/cloud/artifacts.py): release jars, job
# code, entry points and conf, at keys named by their content (the jars: by their version). A job
# run names the keys current when it starts, so a running stream's executors, added at any time,
# fetch the code its driver runs. Hence no aws_s3_object per file: when a build's keys leave
# fileset(), Terraform would destroy those objects (all their versions) under the running stream.
# Each apply whose manifests changed runs `publish` instead, which uploads the keys the bucket lacks
# and tags superseded those the manifests stop naming, and never replaces or deletes an object: the
# storage module's lifecycle rule expires superseded ones. Terraform tracks only the manifests below.
resource "terraform_data" "job_artifacts" {
  triggers_replace = [for key in local.artifact_manifests : filesha256("${local.artifacts_dir}/${key}")]

  provisioner "local-exec" {
    # The repository's venv (`make artifacts` made it); AWS credentials as the provider's, from the environment.
    command     = "${local.repo_root}/.venv/bin/python -m eo.cloud.emr_serverless publish --bucket ${module.storage.artifacts_bucket} --region ${var.region}"
    working_dir = local.repo_root
  }

  depends_on = [aws_s3_object.job_outputs] # whose precondition refuses a plan without the artifacts
}

# What job drivers read (eo/cloud/artifact_store.py JAR_MANIFEST, eo/cloud/artifacts.py
# APPLICATION_MANIFEST): the jars and the application's current keys, at fixed keys, uploaded after
# the objects they name.
resource "aws_s3_object" "artifact_manifests" {
  for_each     = toset(local.artifact_manifests)
  bucket       = module.storage.artifacts_bucket
  key          = each.value
  source       = "${local.artifacts_dir}/${each.value}"
  content_type = "application/json"
  # Not etag: the bucket's SSE-KMS makes S3's ETag no MD5 of the content.
  source_hash = filemd5("${local.artifacts_dir}/${each.value}")

  depends_on = [terraform_data.job_artifacts]
}

# The state of an apply before content-addressed keys had an object per file: forgotten, not
# destroyed (a stream started before runs from them; `publish` tags them superseded).
removed {
  from = aws_s3_object.job_artifacts
  lifecycle {
    destroy = false
  }
}

# The outputs the job runs read, as the zip their job driver passes with spark.archives
# (eo/cloud/artifacts.py OUTPUTS_KEY, OUTPUTS_MEMBER).
data "archive_file" "job_outputs" {
  type        = "zip"
  output_path = "${path.root}/.terraform/${local.eo_env}-${terraform.workspace}-eo-outputs.zip"
  source {
    content  = jsonencode(local.application_outputs)
    filename = "terraform-outputs.json"
  }
}

resource "aws_s3_object" "job_outputs" {
  bucket      = module.storage.artifacts_bucket
  key         = "home/eo-outputs.zip"
  source      = data.archive_file.job_outputs.output_path
  source_hash = data.archive_file.job_outputs.output_md5

  lifecycle {
    # Here, on an object that always exists: a plan from a checkout without build/artifacts would
    # otherwise see no artifacts at all and delete every uploaded one.
    precondition {
      condition     = alltrue([for key in local.artifact_manifests : fileexists("${local.artifacts_dir}/${key}")])
      error_message = "No job artifacts in build/artifacts: run `make artifacts` before terraform plan."
    }
  }
}

# Each environment used to be a root of its own (environments/<env>/main.tf) calling this folder as
# module "platform", its state at the same S3 key its workspace has now. These carry such a state
# over: the plan then moves every module and changes nothing but the local path of the MWAA
# requirements object (../../ became ../), uploaded again as is. No-ops for a state made here.

moved {
  from = module.platform.module.storage
  to   = module.storage
}

moved {
  from = module.platform.module.delta_log_store
  to   = module.delta_log_store
}

moved {
  from = module.platform.module.network
  to   = module.network
}

moved {
  from = module.platform.module.kafka
  to   = module.kafka
}

moved {
  from = module.platform.module.iam
  to   = module.iam
}

moved {
  from = module.platform.module.compute
  to   = module.compute
}

moved {
  from = module.platform.module.orchestration
  to   = module.orchestration
}
