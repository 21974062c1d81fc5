terraform {
  required_version = ">= 1.10"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 6.0"
    }
    archive = {
      source  = "hashicorp/archive"
      version = "~> 2.7"
    }
  }

  # State in S3 with native locking (S3 conditional writes; no lock table), one object per
  # environment: workspace <env> keeps its state at <bucket>/effectively-once/<env>/terraform.tfstate.
  # The bucket and its region are yours: backend.hcl (see backend.hcl.example).
  backend "s3" {
    key                  = "terraform.tfstate"
    workspace_key_prefix = "effectively-once"
    encrypt              = true
    use_lockfile         = true
  }
}
