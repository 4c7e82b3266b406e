resource "terraform_data" "c" {
  count = 1
  input = "child"
}

output "id" {
  value      = terraform_data.c.0.input
  depends_on = [terraform_data.c.0]
}
