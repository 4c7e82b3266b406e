variable "svc" {
  default = { name = "ovr", tags = ["t"] }
}

variable "retyped" {
  type = object({ name = string, size = optional(number, 7), extra = optional(string, "e") })
}

variable "gains_defaults" {
  type = object({ name = string, size = optional(number, 9) })
}

variable "untyped" {
  type = object({ name = string, size = optional(number, 5) })
}
