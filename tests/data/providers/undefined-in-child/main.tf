terraform {
  required_providers {
    bar = {
      source = "hashicorp/bar"
    }
  }
}

module "child" {
  source = "./modules/child"
  providers = {
    bar = bar # WARNING: Reference to undefined provider
  }
}
