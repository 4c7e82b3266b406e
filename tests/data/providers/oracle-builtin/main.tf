# Only the builtin provider, so Terraform can plan offline: defaults inherited, aliases passed.
terraform {
  required_providers {
    terraform = {
      source = "terraform.io/builtin/terraform"
    }
  }
}

provider "terraform" {
  alias = "west"
}

resource "terraform_data" "root" {}

resource "terraform_data" "root_west" {
  provider = terraform.west
}

module "a" {
  source = "./modules/a"
}

module "b" {
  source = "./modules/b"
  providers = {
    terraform.dst = terraform.west
  }
}
