variable "a" { # ERROR: Invalid `deprecated` value
  sensitive  = "123" # ERROR: Unsuitable value type
  nullable   = "true"
  deprecated = "  "
}

variable "b" { # ERROR: Invalid `deprecated` value
  deprecated = ""
}

variable "c" {
  type = object({
    a = string
    b = object({})
  })
  default = { # WARNING: Object attribute is ignored # WARNING: Object attribute is ignored
    a = "boop"
    b = {
      nope = "..."
    }
    c = "hello"
  }
}

output "d" {
  value      = 1
  sensitive  = 2 # ERROR: Unsuitable value type
  deprecated = "" # ERROR: Invalid `deprecated` attribute
}
