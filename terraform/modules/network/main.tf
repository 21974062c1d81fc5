# The private network EMR Serverless job runs, MWAA and MSK Serverless live in: private subnets in
# the named availability zones, NAT gateways for what must reach the internet (MWAA installs its
# requirements from PyPI), gateway endpoints that keep the lake's S3 and the log store's DynamoDB
# traffic off the NAT, interface endpoints for the AWS APIs every job calls (STS, CloudWatch Logs).
# Security groups: MSK accepts 9098 (SASL/IAM) from the EMR and Airflow groups only; egress is the
# least each client needs.

data "aws_region" "current" {}

data "aws_caller_identity" "current" {}

locals {
  azs       = var.availability_zones
  zones     = length(var.availability_zones)
  nat_count = var.single_nat_gateway ? 1 : local.zones
  region    = data.aws_region.current.region
}

resource "aws_vpc" "this" {
  cidr_block           = var.cidr_block
  enable_dns_support   = true
  enable_dns_hostnames = true # private DNS of the interface endpoints and of MSK's brokers
  tags                 = merge(var.tags, { Name = var.name_prefix })
}

# Nothing may use the default group: it gets no rules at all.
resource "aws_default_security_group" "this" {
  vpc_id = aws_vpc.this.id
  tags   = merge(var.tags, { Name = "${var.name_prefix}-default-unused" })
}

# --- subnets, NAT, routes ---------------------------------------------------------------------

resource "aws_subnet" "private" {
  count             = local.zones
  vpc_id            = aws_vpc.this.id
  cidr_block        = cidrsubnet(var.cidr_block, 4, count.index) # a /20 each from a /16: room for job run ENIs
  availability_zone = local.azs[count.index]
  tags              = merge(var.tags, { Name = "${var.name_prefix}-private-${local.azs[count.index]}", tier = "private" })
}

# Public subnets hold the NAT gateways only; nothing launched there gets a public address.
resource "aws_subnet" "public" {
  count                   = local.zones
  vpc_id                  = aws_vpc.this.id
  cidr_block              = cidrsubnet(var.cidr_block, 8, 240 + count.index)
  availability_zone       = local.azs[count.index]
  map_public_ip_on_launch = false
  tags                    = merge(var.tags, { Name = "${var.name_prefix}-public-${local.azs[count.index]}", tier = "public" })
}

resource "aws_internet_gateway" "this" {
  vpc_id = aws_vpc.this.id
  tags   = merge(var.tags, { Name = var.name_prefix })
}

resource "aws_eip" "nat" {
  count  = local.nat_count
  domain = "vpc"
  tags   = merge(var.tags, { Name = "${var.name_prefix}-nat-${count.index}" })
}

resource "aws_nat_gateway" "this" {
  count         = local.nat_count
  allocation_id = aws_eip.nat[count.index].id
  subnet_id     = aws_subnet.public[count.index].id
  tags          = merge(var.tags, { Name = "${var.name_prefix}-nat-${count.index}" })
  depends_on    = [aws_internet_gateway.this]
}

resource "aws_route_table" "public" {
  vpc_id = aws_vpc.this.id
  route {
    cidr_block = "0.0.0.0/0"
    gateway_id = aws_internet_gateway.this.id
  }
  tags = merge(var.tags, { Name = "${var.name_prefix}-public" })
}

resource "aws_route_table_association" "public" {
  count          = local.zones
  subnet_id      = aws_subnet.public[count.index].id
  route_table_id = aws_route_table.public.id
}

# One table per zone: with a NAT gateway per zone, a zone's outage does not cut the others off.
resource "aws_route_table" "private" {
  count  = local.zones
  vpc_id = aws_vpc.this.id
  route {
    cidr_block     = "0.0.0.0/0"
    nat_gateway_id = aws_nat_gateway.this[min(count.index, local.nat_count - 1)].id
  }
  tags = merge(var.tags, { Name = "${var.name_prefix}-private-${local.azs[count.index]}" })
}

resource "aws_route_table_association" "private" {
  count          = local.zones
  subnet_id      = aws_subnet.private[count.index].id
  route_table_id = aws_route_table.private[count.index].id
}

# --- VPC endpoints ------------------------------------------------------------------------------

# Free, and the bulk of the traffic: Delta files and checkpoints (S3), commit coordination (DynamoDB).
resource "aws_vpc_endpoint" "gateway" {
  for_each          = toset(["s3", "dynamodb"])
  vpc_id            = aws_vpc.this.id
  service_name      = "com.amazonaws.${local.region}.${each.key}"
  vpc_endpoint_type = "Gateway"
  route_table_ids   = aws_route_table.private[*].id
  tags              = merge(var.tags, { Name = "${var.name_prefix}-${each.key}" })
}

resource "aws_vpc_endpoint" "interface" {
  for_each            = var.interface_endpoints
  vpc_id              = aws_vpc.this.id
  service_name        = "com.amazonaws.${local.region}.${each.key}"
  vpc_endpoint_type   = "Interface"
  subnet_ids          = aws_subnet.private[*].id
  security_group_ids  = [aws_security_group.endpoints.id]
  private_dns_enabled = true
  tags                = merge(var.tags, { Name = "${var.name_prefix}-${each.key}" })
}

# --- security groups ----------------------------------------------------------------------------

resource "aws_security_group" "endpoints" {
  name        = "${var.name_prefix}-endpoints"
  description = "Interface VPC endpoints: HTTPS from inside the VPC"
  vpc_id      = aws_vpc.this.id
  tags        = merge(var.tags, { Name = "${var.name_prefix}-endpoints" })
}

resource "aws_vpc_security_group_ingress_rule" "endpoints_https" {
  security_group_id = aws_security_group.endpoints.id
  description       = "AWS API calls from the VPC"
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
  cidr_ipv4         = var.cidr_block
}

resource "aws_security_group" "emr" {
  #checkov:skip=CKV2_AWS_5:attached to the compute module's EMR Serverless application through this module's outputs, which checkov does not follow
  name        = "${var.name_prefix}-emr-jobs"
  description = "EMR Serverless job runs: Kafka on MSK, HTTPS to AWS APIs"
  vpc_id      = aws_vpc.this.id
  tags        = merge(var.tags, { Name = "${var.name_prefix}-emr-jobs" })
}

resource "aws_security_group" "airflow" {
  #checkov:skip=CKV2_AWS_5:attached to the orchestration module's MWAA environment through this module's outputs, which checkov does not follow
  name        = "${var.name_prefix}-airflow"
  description = "MWAA: its own components, Kafka on MSK, HTTPS to AWS APIs and PyPI"
  vpc_id      = aws_vpc.this.id
  tags        = merge(var.tags, { Name = "${var.name_prefix}-airflow" })
}

resource "aws_security_group" "msk" {
  #checkov:skip=CKV2_AWS_5:attached to the kafka module's MSK Serverless cluster through this module's outputs, which checkov does not follow
  name        = "${var.name_prefix}-msk"
  description = "MSK Serverless: SASL/IAM (9098) from the EMR and Airflow groups only"
  vpc_id      = aws_vpc.this.id
  tags        = merge(var.tags, { Name = "${var.name_prefix}-msk" })
}

# Clients of the cluster: the Spark jobs (the stream's source) and Airflow (the supervisor's lag check).
resource "aws_vpc_security_group_ingress_rule" "msk_from_clients" {
  for_each                     = { emr = aws_security_group.emr.id, airflow = aws_security_group.airflow.id }
  security_group_id            = aws_security_group.msk.id
  description                  = "Kafka SASL/IAM from the ${each.key} group"
  ip_protocol                  = "tcp"
  from_port                    = 9098
  to_port                      = 9098
  referenced_security_group_id = each.value
}

resource "aws_vpc_security_group_egress_rule" "to_msk" {
  for_each                     = { emr = aws_security_group.emr.id, airflow = aws_security_group.airflow.id }
  security_group_id            = each.value
  description                  = "Kafka SASL/IAM to MSK Serverless"
  ip_protocol                  = "tcp"
  from_port                    = 9098
  to_port                      = 9098
  referenced_security_group_id = aws_security_group.msk.id
}

# S3, DynamoDB, STS, CloudWatch, EMR and MWAA APIs (through the endpoints or the NAT), and PyPI for MWAA.
resource "aws_vpc_security_group_egress_rule" "https" {
  for_each          = { emr = aws_security_group.emr.id, airflow = aws_security_group.airflow.id }
  security_group_id = each.value
  description       = "HTTPS to AWS APIs (endpoints or NAT)"
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
  cidr_ipv4         = "0.0.0.0/0"
}

# MWAA requires its group to let its own components (scheduler, workers, web server, metadata
# database endpoint) talk to each other.
resource "aws_vpc_security_group_ingress_rule" "airflow_self" {
  security_group_id            = aws_security_group.airflow.id
  description                  = "MWAA components among themselves"
  ip_protocol                  = "-1"
  referenced_security_group_id = aws_security_group.airflow.id
}

resource "aws_vpc_security_group_egress_rule" "airflow_self" {
  security_group_id            = aws_security_group.airflow.id
  description                  = "MWAA components among themselves"
  ip_protocol                  = "-1"
  referenced_security_group_id = aws_security_group.airflow.id
}

# --- flow logs ----------------------------------------------------------------------------------

resource "aws_cloudwatch_log_group" "flow_logs" {
  name              = "/${var.name_prefix}/vpc-flow-logs"
  retention_in_days = var.flow_log_retention_days
  kms_key_id        = var.kms_key_arn
  tags              = var.tags
}

resource "aws_iam_role" "flow_logs" {
  name = "${var.name_prefix}-vpc-flow-logs"
  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = "vpc-flow-logs.amazonaws.com" }
      Action    = "sts:AssumeRole"
      Condition = { StringEquals = { "aws:SourceAccount" = data.aws_caller_identity.current.account_id } }
    }]
  })
  tags = var.tags
}

resource "aws_iam_role_policy" "flow_logs" {
  name = "write-flow-logs"
  role = aws_iam_role.flow_logs.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect   = "Allow"
      Action   = ["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"]
      Resource = [aws_cloudwatch_log_group.flow_logs.arn, "${aws_cloudwatch_log_group.flow_logs.arn}:*"]
    }]
  })
}

resource "aws_flow_log" "this" {
  vpc_id               = aws_vpc.this.id
  traffic_type         = "ALL"
  log_destination_type = "cloud-watch-logs"
  log_destination      = aws_cloudwatch_log_group.flow_logs.arn
  iam_role_arn         = aws_iam_role.flow_logs.arn
  tags                 = var.tags
}
