variable "vpc_id" {
  type = string
}

variable "cidr" {
  type = string
}

resource "aws_subnet" "this" {
  count      = 2
  vpc_id     = var.vpc_id
  cidr_block = cidrsubnet(var.cidr, 8, count.index)
  tags       = module.common.tags
}

# A sibling directory of the package, reached with "../".
module "common" {
  source = "../common"
}
