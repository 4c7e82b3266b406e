# The seed's tunnel needs aws.src and aws.dst; the call passes only aws.src.
terraform {
  required_providers {
    aws = {
      source = "hashicorp/aws"
    }
  }
}

provider "aws" {
  alias  = "usw2"
  region = "us-west-2"
}

module "tunnel" { # ERROR: Missing required provider configuration
  source = "./modules/tunnel"
  providers = {
    aws.src = aws.usw2
  }
}
