terraform {
  required_providers {
    foo = {
      source = "hashicorp/foo"
    }
  }
}

provider "foo" {}

module "child" {
  source = "./modules/child"
  providers = {
    foo = foo # ERROR: Provider type mismatch
  }
}
