resource "test" "a" {
  count = 1
  _ {
    count = "provider-count"
    other = 1
  }
}
