variable "vpc_id" { type = string }
variable "cidr" { type = string }
variable "az" { type = string }
variable "name" { type = string }
variable "userdata" { type = string }

resource "aws_subnet" "this" {
  vpc_id            = var.vpc_id
  cidr_block        = var.cidr
  availability_zone = var.az
  tags = {
    Name = var.name
  }
}

output "id" {
  value = aws_subnet.this.id
}
