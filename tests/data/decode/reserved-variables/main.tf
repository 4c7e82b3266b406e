variable "count" { # ERROR: Invalid variable name
}

variable "providers" { # ERROR: Invalid variable name
}

variable "lifecycle" { # ERROR: Invalid variable name
}

variable "ignore_nested_deprecations" {
}
