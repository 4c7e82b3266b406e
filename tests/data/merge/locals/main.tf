locals {
  a = 1
  b = 2
}

locals {
  c = 3
}
