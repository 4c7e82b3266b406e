resource "test" "a" {
  _ {
    count = "override-count"
  }
}

resource "test" "b" {
  name = "plain-override"
  _ {
    input = "escaped-override"
  }
}
