locals {
  a = "one"
  c = "three"
  d = 4 # ERROR: Missing base local value definition to override
}
