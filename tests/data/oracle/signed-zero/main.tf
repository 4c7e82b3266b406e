# Terraform keeps the sign of zero: each of these is "-0" as a string (a literal flatten must not
# fold to 0).
variable "x" {
  type    = string
  default = -0.0
}

locals {
  a = -0
  b = [-0, -1.5, 0.0]
}

output "x" {
  value = var.x
}

output "a" {
  value = tostring(local.a)
}

output "b" {
  value = jsonencode(local.b)
}
