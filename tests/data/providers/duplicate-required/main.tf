terraform {
  required_providers {
    aws = {
      source = "hashicorp/aws"
    }
    amazon = { # WARNING: Duplicate required provider
      source = "hashicorp/aws"
    }
  }
}

resource "aws_vpc" "x" {}
