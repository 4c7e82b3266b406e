resource "terraform_data" "a" {
  count = 3 # WARNING: Override leaves both count and for_each set
}

module "m" {
  for_each = toset(["y"])
}

resource "terraform_data" "b" {
  count    = 0 # WARNING: Override leaves both count and for_each set
  for_each = {}
}
