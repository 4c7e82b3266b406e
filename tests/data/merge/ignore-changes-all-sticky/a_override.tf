resource "test_instance" "a" {
  lifecycle {
    ignore_changes = all
  }
}

resource "test_instance" "b" {
  lifecycle {
    ignore_changes = []
  }
}
