variable "bad_default" {
  type    = number
  default = "abc" # ERROR: Invalid default value for variable
}

variable "bad_type" {
  type = lisst(string) # ERROR: Invalid type specification
}

variable "null_not_nullable" {
  type     = string
  default  = null # ERROR: Invalid default value for variable
  nullable = false
}

variable "optional_defaults" {
  type = list(object({
    a = optional(string, "x")
    b = number
  }))
  default = [{ b = 1 }]
}

variable "missing_attr" {
  type = object({ a = string })
  default = {} # ERROR: Invalid default value for variable
}
