# depends_on is fine when the module below only declares what it needs.
terraform {
  required_providers {
    aws = {
      source = "hashicorp/aws"
    }
  }
}

provider "aws" {
  alias  = "west"
  region = "us-west-2"
}

resource "aws_vpc" "main" {
  provider = aws.west
}

module "child" {
  source     = "./modules/child"
  depends_on = [aws_vpc.main]
  providers = {
    aws.dst = aws.west
  }
}
