resource "terraform_data" "this" {
  input            = "c"
  triggers_replace = [path.module, "${path.module}/x"]

  lifecycle {
    ignore_changes = [input]
  }
}

output "value" {
  value = terraform_data.this.input
}
