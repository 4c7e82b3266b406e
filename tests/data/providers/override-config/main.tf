terraform {
  required_providers {
    aws = {
      source = "hashicorp/aws"
    }
  }
}

provider "aws" {
  region = "us-east-1"
}

module "child" {
  source = "./modules/child"
  providers = {
    aws = aws # ERROR: Cannot override provider configuration
  }
}
