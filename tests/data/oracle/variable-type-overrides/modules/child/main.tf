variable "given" {
  type = list(object({ name = string, size = optional(number, 10) }))
}

output "given" {
  value = var.given
}
