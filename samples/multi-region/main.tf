terraform {
  required_version = ">= 1.5"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0, < 6.0"
    }
  }
}

# The default configuration, inherited by every module that does not get one passed.
provider "aws" {
  region = "us-east-1"
}

provider "aws" {
  alias  = "usw2"
  region = "us-west-2"
}

provider "aws" {
  alias  = "euw1"
  region = "eu-west-1"
}

module "bucket_w1" {
  source = "./modules/bucket"
  name   = "${var.prefix}-logs-w1"
  providers = {
    aws = aws.usw2
  }
}

module "bucket_w2" {
  source = "./modules/bucket"
  name   = "${var.prefix}-logs-w2"
  providers = {
    aws = aws.euw1
  }
}

module "tunnel" {
  source = "./modules/tunnel"
  providers = {
    aws.src = aws.usw2
    aws.dst = aws.euw1
  }
  cidr_src = "10.1.0.0/16"
  cidr_dst = "10.2.0.0/16"
}

variable "prefix" {
  type    = string
  default = "acme"
}

output "buckets" {
  value = [module.bucket_w1.arn, module.bucket_w2.arn]
}
