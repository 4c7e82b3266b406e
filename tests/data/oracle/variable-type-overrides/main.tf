# Issue 14 items 2 and 3: defaults written as merged, and an override's type that keeps the first
# declaration's optional-attribute defaults (Terraform's configs.Variable.merge keeps TypeDefaults).
module "vars" {
  source = "./modules/vars"
}

module "given" {
  source         = "./modules/vars"
  svc            = { name = "g" }
  retyped        = { name = "g", extra = null }
  gains_defaults = { name = "g" }
  untyped        = { name = "g" }
}

output "vars" {
  value = module.vars.all
}

output "given" {
  value = module.given.all
}
