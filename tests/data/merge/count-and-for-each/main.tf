resource "terraform_data" "a" {
  for_each = toset(["x"])
}

module "m" {
  source = "./m"
  count  = 2 # WARNING: Override leaves both count and for_each set
}

resource "terraform_data" "b" {
  count = 1
}
