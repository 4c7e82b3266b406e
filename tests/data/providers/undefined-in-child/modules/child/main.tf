resource "baz_thing" "x" {}
