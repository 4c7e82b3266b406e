variable "seed" {
  type = string
}

resource "terraform_data" "y" {
  input = "${var.seed}!"
}

output "out" {
  value = terraform_data.y.input
}
