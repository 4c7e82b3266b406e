variable "name" {
  type = string
}

variable "cidr" {
  type = string
}

resource "aws_vpc" "this" {
  cidr_block = var.cidr
  tags = {
    Name = var.name
  }
}

# A module inside the same package: installed from the package, not from the registry again.
module "subnets" {
  source = "./modules/subnets"

  vpc_id = aws_vpc.this.id
  cidr   = var.cidr
}

output "vpc_id" {
  value = aws_vpc.this.id
}
