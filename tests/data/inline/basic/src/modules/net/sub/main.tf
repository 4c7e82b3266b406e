variable "parent" {
  type = string
}

resource "terraform_data" "this" {
  input = "${var.parent}/sub"
}

output "value" {
  value = terraform_data.this.output
}
