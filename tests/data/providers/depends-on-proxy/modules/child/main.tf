terraform {
  required_providers {
    aws = {
      source                = "hashicorp/aws"
      configuration_aliases = [aws.dst]
    }
  }
}

resource "aws_vpc" "x" {
  provider = aws.dst
}
