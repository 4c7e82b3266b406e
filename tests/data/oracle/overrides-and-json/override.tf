variable "env" {
  default = "prod"
}

locals {
  base = "service-${var.env}"
}
