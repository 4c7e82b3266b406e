resource "test" "a" {
  count = 1
  _ {
    count = "provider-count"
    other = 1
  }
}

resource "test" "b" {
  input = "plain"
  _ {
    name = "escaped"
    for_each = "provider-for-each"
  }
}
