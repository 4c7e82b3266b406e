terraform {
  required_version = ">= 1.3"
}

variable "env" {
  type        = string
  default     = "dev"
  description = "Literal text: $${not_an_interpolation}"
}

variable "settings" {
  type = object({
    size = optional(number, 1)
    tags = optional(map(string), {})
  })
  default = {}
}

locals {
  base    = "svc-${var.env}"
  numbers = [1.5, 0.1000000000000000055511151231257827, 12345678901234567890, 1e3]
  strings = ["tab\there", "quote\"", "unicode é ✓", "percent %%{x}", "dollar $${y}"]
  nested  = { for k, v in var.settings.tags : k => upper(v) if v != "" }
  script  = <<EOT
#!/bin/sh
echo "${local.base}"
EOT
}

resource "terraform_data" "svc" {
  input = {
    name   = local.base
    size   = var.settings.size
    script = local.script
  }
}

output "name" {
  value = terraform_data.svc.input.name
}

output "numbers" {
  value = local.numbers
}

output "strings" {
  value = local.strings
}
