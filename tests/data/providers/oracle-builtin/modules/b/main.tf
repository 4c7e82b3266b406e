terraform {
  required_providers {
    terraform = {
      source                = "terraform.io/builtin/terraform"
      configuration_aliases = [terraform.dst]
    }
  }
}

resource "terraform_data" "y" {
  provider = terraform.dst
}

resource "terraform_data" "z" {}

module "c" {
  source = "../c"
  providers = {
    terraform = terraform.dst
  }
}
