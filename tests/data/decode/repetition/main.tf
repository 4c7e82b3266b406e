resource "test" "a" {
  count    = 1
  for_each = {} # ERROR: Invalid combination of "count" and "for_each"
}

data "test" "b" {
  lifecycle {
    enabled = true
  }
  count    = 1
  for_each = {} # ERROR: Invalid combination of "count", "enabled", and "for_each"
}

ephemeral "test" "c" {
  lifecycle {
    enabled = var.on # ERROR: Invalid combination of "count" and "enabled"
  }
  count = 1
}

module "m" {
  source = "./m"
  lifecycle {
    enabled = true
  }
  for_each = {} # ERROR: Invalid combination of "enabled" and "for_each"
}

resource "test" "ok" {
  lifecycle {
    enabled = true
  }
}
