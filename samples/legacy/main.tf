# A legacy module that still configures its own provider. Terraform forbids count, for_each and
# depends_on on calls to such a module, so it is called once.
module "legacy" {
  source      = "./modules/legacy"
  environment = "production"
}

output "queue_url" {
  value = module.legacy.queue_url
}
