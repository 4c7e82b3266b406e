variable "a" {
  sensitive = false
  nullable  = true
}

variable "b" {
  default = null
}
