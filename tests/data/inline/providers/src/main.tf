provider "terraform" {
  alias = "x"
}

module "p" {
  source = "./modules/p"
  providers = {
    terraform = terraform.x
  }
}

module "own" {
  source = "./modules/own"
}

output "p" {
  value = module.p.id
}

# A plain call whose counted child inherits the passed configuration: once m is inlined, the
# child is called from the root and gets terraform.x passed explicitly.
module "m" {
  source = "./modules/m"
  providers = {
    terraform = terraform.x
  }
}
