check "empty" { # ERROR: Zero assert blocks
}

check "c" {
  data "test" "a" {
    count = 1 # ERROR: Invalid "count" attribute
    lifecycle { # ERROR: Invalid lifecycle block
    }
  }
  data "test" "b" { # ERROR: Multiple data resource blocks
  }
  assert {
    condition     = false # ERROR: Invalid assert expression
    error_message = "x"
  }
  assert {
    condition     = data.test.a.ok
    error_message = "x"
  }
}
