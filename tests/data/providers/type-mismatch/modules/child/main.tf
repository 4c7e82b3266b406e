terraform {
  required_providers {
    foo = {
      source = "example.com/vendor/foo"
    }
  }
}

resource "foo_thing" "x" {}
