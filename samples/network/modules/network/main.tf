variable "name" {
  type = string
}

variable "cidr" {
  type = string
  validation {
    condition     = can(cidrhost(var.cidr, 0))
    error_message = "The cidr must be a valid IPv4 CIDR block."
  }
}

variable "azs" {
  type    = number
  default = 2
}

data "aws_availability_zones" "available" {
  state = "available"
}

resource "aws_vpc" "this" {
  cidr_block           = var.cidr
  enable_dns_hostnames = true
  tags = {
    Name = var.name
  }
}

module "subnet" {
  source   = "./subnet"
  count    = var.azs
  vpc_id   = aws_vpc.this.id
  cidr     = cidrsubnet(var.cidr, 8, count.index)
  az       = data.aws_availability_zones.available.names[count.index]
  name     = "${var.name}-${count.index}"
  userdata = file("${path.module}/templates/nat.sh")
}

output "vpc_id" {
  value = aws_vpc.this.id
}
