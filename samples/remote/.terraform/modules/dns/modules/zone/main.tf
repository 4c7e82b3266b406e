variable "zone_name" {
  type = string
}

variable "vpc_id" {
  type = string
}

resource "aws_route53_zone" "this" {
  name = var.zone_name
  vpc {
    vpc_id = var.vpc_id
  }
}

module "record" {
  source = "../record"

  zone_id = aws_route53_zone.this.zone_id
  content = templatefile("${path.module}/templates/record.tpl", { zone = var.zone_name })
}
