locals {
  environments = {
    staging    = { cidr = "10.10.0.0/16", azs = 2 }
    production = { cidr = "10.20.0.0/16", azs = 3 }
  }
}

# One network per environment.
module "network" {
  for_each = local.environments
  source   = "./modules/network"

  name = each.key
  cidr = each.value.cidr
  azs  = each.value.azs
}

# Two identical sandboxes.
module "sandbox" {
  count  = 2
  source = "./modules/network"

  name = "sandbox-${count.index}"
  cidr = cidrsubnet("172.16.0.0/12", 4, count.index)
  azs  = 1
}

output "vpc_ids" {
  value = { for env, net in module.network : env => net.vpc_id }
}
