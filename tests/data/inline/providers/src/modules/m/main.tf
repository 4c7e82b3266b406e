terraform {
  required_providers {
    terraform = {
      source = "terraform.io/builtin/terraform"
    }
  }
}

module "k" {
  source = "../k"
  count  = 1
}
