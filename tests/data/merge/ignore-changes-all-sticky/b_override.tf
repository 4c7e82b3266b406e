resource "test_instance" "a" {
  lifecycle {
    ignore_changes = [ami]
  }
}
