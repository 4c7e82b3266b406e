# A child module: a root module's variables also appear in the plan's "variables", where Terraform
# records an override's default before the type's defaults apply (docs/overrides.md).
variable "svc" {
  type    = object({ name = string, size = optional(number, 3), tags = optional(list(string), []) })
  default = { name = "dns", tags = [] }
}

variable "retyped" {
  type    = object({ name = string, size = optional(number, 3) })
  default = { name = "x" }
}

variable "gains_defaults" {
  type    = object({ name = string, size = optional(number) })
  default = { name = "y" }
}

variable "untyped" {
  default = { name = "z" }
}

module "child" {
  source = "../child"
  given  = [{ name = "a" }, { name = "b", size = 1 }]
}

resource "terraform_data" "r" {
  input = [var.svc, var.retyped, var.gains_defaults, var.untyped]
}

output "all" {
  value = [var.svc, var.retyped, var.gains_defaults, var.untyped, module.child.given]
}
