resource "test" "native" {
  ebs {
    size = 1
  }
  dynamic "tag" {
    for_each = ["a", "b"]
    content {
      key = tag.value
    }
  }
  setting {
    inner {
      v = "static"
    }
  }
}

resource "test" "json" {
  ebs {
    size = 2
  }
  dynamic "tag" {
    for_each = ["c"]
    content {
      key = tag.value
    }
  }
}
