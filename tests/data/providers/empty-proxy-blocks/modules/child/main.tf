provider "foo" {} # WARNING: Redundant empty provider block

resource "foo_thing" "x" {}
