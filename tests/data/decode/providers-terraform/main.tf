provider "test" {
  alias    = "a"
  for_each = {} # ERROR: Reserved argument name in provider block
  version  = "~> 1.0" # WARNING: Version constraints inside provider configuration blocks are deprecated
}
