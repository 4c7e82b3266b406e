variable "type_only" { # ERROR: Invalid default value for variable
  type = string
}

variable "default_only" { # ERROR: Invalid default value for variable
  default = "not a number"
}

variable "both" { # ERROR: Invalid default value for variable
  type    = map(string)
  default = ["x"] # ERROR: Invalid default value for variable
}

variable "not_null" { # ERROR: Invalid default value for variable
  default = null
}

variable "converted" {
  type = string
}

variable "validated" {
  validation { # ERROR: Can't override validation blocks
    condition     = true
    error_message = "x"
  }
}

variable "missing" { # ERROR: Missing base variable declaration to override
  default = 1
}
