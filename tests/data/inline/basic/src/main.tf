resource "terraform_data" "first" {
  input = "first"
}

module "net" {
  source     = "./modules/net"
  name       = "prod"
  cidrs      = ["10.0.0.0/16", "10.1.0.0/16"]
  port       = "8080"
  depends_on = [terraform_data.first]
}

module "counted" {
  source = "./modules/counted"
  count  = length(["a", "b"]) # known at plan time: stays a call
  label  = "${module.net.name}-${count.index}"
}

locals {
  summary = "${module.net.name}: ${length(module.net.ids)} ids"
}

resource "terraform_data" "after" {
  input      = module.net
  depends_on = [module.net]
}

output "summary" {
  value = local.summary
}

output "net" {
  value = module.net.name
}

output "counted" {
  value = module.counted[*].label
}
