resource "test" "a" {
  count    = 1
  for_each = {} # ERROR: Invalid combination of "count" and "for_each"
}

module "m" {
  source   = "./m"
  count    = 1
  for_each = {} # ERROR: Invalid combination of "count" and "for_each"
}
