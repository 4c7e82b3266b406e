module "a" {
  source = "./modules/a"
}

module "r" {
  source = "./modules/r"
  count  = length(["a", "b"]) # known at plan time: stays a call
  n      = count.index
}

output "k" {
  value = module.a.k_labels
}

output "r" {
  value = module.r[*].v
}
