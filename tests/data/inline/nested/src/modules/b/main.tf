variable "name" {}

resource "terraform_data" "this" {
  input = "${var.name}/b"
}

module "c" {
  source = "../c"
}

output "value" {
  value = terraform_data.this.input
}

output "c" {
  value = module.c.value
}
