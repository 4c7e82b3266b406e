terraform {
  required_providers {
    aws = {
      source = "hashicorp/aws"
    }
    bar = {
      source = "acme/bar"
    }
  }
  backend "local" {
    path = "x.tfstate"
  }
  provider_meta "aws" {
    hello = "override"
  }
}
