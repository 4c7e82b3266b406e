module "m" {
  providers = {}
  depends_on = [terraform_data.x] # ERROR: Unsupported override
}

module "nope" { # ERROR: Missing module call to override
}
