resource "test_instance" "a" {
  lifecycle {
    ignore_changes = [tags]
  }
}

resource "test_instance" "b" {
  lifecycle {
    ignore_changes = [tags]
  }
}
