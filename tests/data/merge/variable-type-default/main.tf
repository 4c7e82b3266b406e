variable "type_only" {
  type    = list(string)
  default = ["x"]
}

variable "default_only" {
  type    = number
  default = 1
}

variable "both" {
  type    = string
  default = "x"
}

variable "not_null" {
  type     = string
  default  = "x"
  nullable = false
}

variable "converted" {
  type    = number
  default = "01"
}

variable "validated" {
  default = 1
  validation {
    condition     = var.validated > 0
    error_message = "positive"
  }
}
