terraform {
  required_providers {
    terraform = {
      source = "terraform.io/builtin/terraform"
    }
  }
}

module "k" {
  source = "../k"
  count  = length(["a"]) # known at plan time: stays a call
}
