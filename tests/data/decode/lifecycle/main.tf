resource "test" "a" {
  lifecycle {
    create_before_destroy = "nope" # ERROR: Unsuitable value type
    prevent_destroy       = "true"
  }
  lifecycle { # ERROR: Duplicate lifecycle block
  }
}

data "test" "b" {
  lifecycle {
    ignore_changes = [] # ERROR: Invalid data resource lifecycle argument
  }
}

resource "test" "c" {
  count    = 2
  for_each = null # ERROR: Invalid combination of "count" and "for_each"
  lifecycle {
    replace_triggered_by = [test.d[count.index], test.e.id]
  }
}

resource "test" "d" {
  lifecycle {
    replace_triggered_by = [test.a[each.value]] # ERROR: Invalid each reference in replace_triggered_by expression
  }
}

resource "test" "d2" {
  lifecycle {
    replace_triggered_by = [test.a[count.num]] # ERROR: Invalid count reference in replace_triggered_by expression
  }
}

resource "test" "d3" {
  lifecycle {
    replace_triggered_by = [var.x] # ERROR: Invalid reference in replace_triggered_by expression # ERROR: Invalid replace_triggered_by expression
  }
}

resource "test" "d4" {
  lifecycle {
    replace_triggered_by = [not_a_reference] # ERROR: Invalid reference
  }
}

resource "test" "d5" {
  lifecycle {
    replace_triggered_by = [test.a.id == test.b.id] # ERROR: Invalid replace_triggered_by expression
  }
}

resource "test" "e" {
  locals {} # ERROR: Reserved block type name in resource block
  _ {}
  _ {} # ERROR: Duplicate escaping block
}

data "test" "f" {
  locals {} # ERROR: Reserved block type name in data block
}
