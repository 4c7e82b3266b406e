terraform {
  required_providers {
    aws = {
      source                = "hashicorp/aws"
      configuration_aliases = [aws.src, aws.dst]
    }
  }
}

variable "cidr_src" {
  type = string
}

variable "cidr_dst" {
  type = string
}

resource "aws_vpc" "src" {
  provider   = aws.src
  cidr_block = var.cidr_src
}

resource "aws_vpc" "dst" {
  provider   = aws.dst
  cidr_block = var.cidr_dst
}

resource "aws_vpc_peering_connection" "this" {
  provider    = aws.src
  vpc_id      = aws_vpc.src.id
  peer_vpc_id = aws_vpc.dst.id
  peer_region = "eu-west-1"
}

resource "aws_vpc_peering_connection_accepter" "this" {
  provider                  = aws.dst
  vpc_peering_connection_id = aws_vpc_peering_connection.this.id
  auto_accept               = true
}
