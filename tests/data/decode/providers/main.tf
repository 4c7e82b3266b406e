provider "AWS" { # ERROR: Invalid provider local name
  count = 1
}

provider "bad_name" { # ERROR: Invalid provider local name
}

provider "test" {
  alias      = "bad alias" # ERROR: Invalid provider configuration alias
  version    = "1.0.0" # WARNING: Version constraints inside provider configuration blocks are deprecated
  count      = 3 # ERROR: Reserved argument name in provider block
  depends_on = [] # ERROR: Reserved argument name in provider block
  source     = "x/y" # ERROR: Reserved argument name in provider block
  lifecycle {} # ERROR: Reserved block type name in provider block
  locals {} # ERROR: Reserved block type name in provider block
}

provider "test" {
  for_each = {} # ERROR: Alias required when using "for_each"
}

provider "test" {
  alias    = "each"
  for_each = {}
}

resource "test_thing" "a" {
  provider = Test # ERROR: Invalid provider local name
}

data "test_thing" "b" {
  provider = my_test.x # ERROR: Invalid provider local name
}

resource "test_thing" "c" {
  provider = test.each["k"]
}
