resource "test" "a" {
  _ {
    count = "override-count"
  }
}
