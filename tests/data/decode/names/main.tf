variable "1bad" { # ERROR: Invalid variable name
}

output "bad output" { # ERROR: Invalid output name
  value = 1
}

resource "bad type" "ok" { # ERROR: Invalid resource type name
}

resource "ok" "bad name" { # ERROR: Invalid resource name
}

data "bad source" "ok" { # ERROR: Invalid data source name
}

data "ok" "bad.name" { # ERROR: Invalid data resource name
}

ephemeral "bad type" "ok" { # ERROR: Invalid ephemeral resource type name
}

check "bad check" { # ERROR: Invalid check block name
  assert {
    condition     = var.x
    error_message = "x"
  }
}

variable "fine-name_2" {
}
