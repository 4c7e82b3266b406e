variable "a" {
  type        = string
  default     = "base"
  description = "base description"
  sensitive   = true
  nullable    = false
}

variable "b" {
  type    = number
  default = 1
}
