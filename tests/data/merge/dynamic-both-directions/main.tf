variable "disks" {
  default = []
}

resource "test" "native" {
  dynamic "ebs" {
    for_each = var.disks
    content {
      size = ebs.value
    }
  }
  tag {
    key = "base"
  }
  dynamic "keep" {
    for_each = var.disks
    content {
      v = keep.value
    }
  }
  setting {
    dynamic "inner" {
      for_each = var.disks
      content {
        v = inner.value
      }
    }
  }
}
