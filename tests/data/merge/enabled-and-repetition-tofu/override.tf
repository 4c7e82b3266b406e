resource "terraform_data" "a" {
  count = 2 # WARNING: Override leaves both count and enabled set
}

resource "terraform_data" "b" {
  for_each = toset(["y"])
}

resource "terraform_data" "c" {
  count = 1 # WARNING: Override leaves both count and for_each set
  lifecycle {
    enabled = false
  }
}

data "terraform_remote_state" "d" {
  count = 0 # WARNING: Override leaves both count and enabled set
}

module "m" {
  count    = 3 # WARNING: Override leaves count, enabled and for_each set
  for_each = {}
}
