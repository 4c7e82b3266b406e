module "a" {
  source = "./modules/a"
}

module "r" {
  source = "./modules/r"
  count  = 2
  n      = count.index
}

output "k" {
  value = module.a.k_labels
}

output "r" {
  value = module.r[*].v
}
