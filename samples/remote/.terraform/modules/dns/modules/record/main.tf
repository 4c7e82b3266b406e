variable "zone_id" {
  type = string
}

variable "content" {
  type = string
}

resource "aws_route53_record" "txt" {
  zone_id = var.zone_id
  name    = "@"
  type    = "TXT"
  ttl     = 300
  records = [var.content]
}
