variable "v" {
  validation {
    condition     = true # ERROR: Invalid validation expression # ERROR: Invalid variable validation condition
    error_message = "Must be true."
  }
  validation {
    condition     = var.other > 0 # ERROR: Invalid variable validation condition
    error_message = "Refers to ${var.other}."
  }
  validation {
    condition     = alltrue([for x in var.v : x != null])
    error_message = "ok"
  }
}

resource "test" "a" {
  lifecycle {
    precondition {
      condition     = 1 == 1 # ERROR: Invalid precondition expression
      error_message = "constant"
    }
    postcondition {
      condition     = test.a.id != "" # ERROR: Invalid reference in postcondition
      error_message = "self ${self.id}"
    }
    precondition { # ERROR: Missing required argument
      error_message = "no condition"
    }
  }
}

data "test" "b" {
  count = 1
  lifecycle {
    postcondition {
      condition     = self.id != ""
      error_message = "${data.test.b[0].id}" # ERROR: Invalid reference in postcondition
    }
  }
}

output "o" {
  value = 1
  precondition {
    condition     = "${true}" # ERROR: Invalid precondition expression
    error_message = "x"
  }
  postcondition { # ERROR: Postconditions are not allowed
    condition     = var.x
    error_message = "x"
  }
}

output "missing" { # ERROR: Missing required argument
  description = "no value"
}
