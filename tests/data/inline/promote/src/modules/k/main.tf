variable "label" {
  type = string
}

resource "terraform_data" "x" {
  input = var.label
}

output "label" {
  value = terraform_data.x.input
}
