terraform {
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 4.0"
    }
    foo = {
      source = "acme/foo"
    }
  }
  backend "s3" {
    bucket = "base"
  }
  provider_meta "aws" {
    hello = "base"
  }
}
