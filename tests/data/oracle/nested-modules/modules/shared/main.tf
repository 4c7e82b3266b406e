variable "label" {
  type = string
}

locals {
  tag = "shared:${var.label}"
}

resource "terraform_data" "marker" {
  input = local.tag
}

output "tag" {
  value = local.tag
}
