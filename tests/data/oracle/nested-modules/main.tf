locals {
  apps = {
    api = { replicas = 2 }
    web = { replicas = 1 }
  }
}

module "app" {
  for_each = local.apps
  source   = "./modules/app"
  name     = each.key
  replicas = each.value.replicas
}

module "counted" {
  count    = 2
  source   = "./modules/app"
  name     = "counted-${count.index}"
  replicas = 1
}

module "shared_direct" {
  source = "./modules/shared"
  label  = "direct"
}

output "apps" {
  value = { for k, m in module.app : k => m.summary }
}

output "counted" {
  value = module.counted[*].summary
}
