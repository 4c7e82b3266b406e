variable "v" {
  default = 1
}

resource "terraform_data" "r" {
  input = var.v
}

output "o" {
  value = var.v
}
