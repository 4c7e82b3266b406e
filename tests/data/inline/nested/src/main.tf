# Names the inlined module would take are already used here: inlining adds a suffix.
locals {
  a__name = "taken"
}

resource "terraform_data" "a__this" {
  input = local.a__name
}

# A move into the module, written before inlining: it chains with the new moved blocks.
moved {
  from = terraform_data.legacy
  to   = module.a.terraform_data.legacy
}

module "a" {
  source     = "./modules/a"
  prefix     = "x"
  depends_on = [terraform_data.a__this]
}

output "b_all" {
  value = module.a.b_all
}

output "secret" {
  value     = module.a.secret
  sensitive = true
}

output "greeting" {
  value = module.a.greeting
}
