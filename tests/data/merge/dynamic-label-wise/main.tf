resource "test" "foo" {
  dynamic "a" {
    for_each = var.a
    content {
      v = a.value
    }
  }
  dynamic "b" {
    for_each = var.b
    content {
      v = b.value
    }
  }
  c {
    v = 1
  }
}

variable "a" {
  default = []
}

variable "b" {
  default = []
}
