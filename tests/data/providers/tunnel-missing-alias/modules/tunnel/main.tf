terraform {
  required_providers {
    aws = {
      source                = "hashicorp/aws"
      configuration_aliases = [aws.src, aws.dst]
    }
  }
}

resource "aws_vpc" "src" {
  provider = aws.src
}

resource "aws_vpc" "dst" {
  provider = aws.dst
}
