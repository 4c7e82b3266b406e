# Issue 14 item 1: HCL's legacy index steps (`a.0`) in arguments that Terraform reads as static
# traversals. Native syntax accepts them; Terraform's JSON syntax only accepts `a[0]`.
resource "terraform_data" "a" {
  count = 2
  input = { sizes = [1, 2], tags = { k = "v" } }
}

resource "terraform_data" "b" {
  input      = terraform_data.a.0.input
  depends_on = [terraform_data.a.1, terraform_data.a.0]

  lifecycle {
    ignore_changes       = [input.sizes.0, input.tags["k"]]
    replace_triggered_by = [terraform_data.a.0.input]
  }
}

resource "terraform_data" "renamed" {
  count = 1
  input = "x"
}

moved {
  from = terraform_data.old.0
  to   = terraform_data.renamed.0
}

module "child" {
  source     = "./modules/child"
  depends_on = [terraform_data.a.1]
}

output "first" {
  value      = terraform_data.a.0.output
  depends_on = [terraform_data.b]
}
