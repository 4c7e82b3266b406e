variable "name" {
  type = string
  validation {
    condition     = length(var.name) > 2
    error_message = "The name ${var.name} is too short."
  }
}

variable "cidrs" {
  type = list(string)
}

variable "port" {
  type = number
}

variable "suffix" {
  type    = string
  default = "$${literal} and %%{not a directive}"
}

locals {
  name  = "${var.name}-net"
  # a local that shadows nothing but looks like a reference in a string
  text  = "var.name is ${var.name}; path.module"
  squares = [for var in var.cidrs : upper(var)]
  tmpl  = "%{for c in var.cidrs}[${c}]%{endfor}"
}

resource "terraform_data" "this" {
  input = {
    name   = local.name
    cidrs  = var.cidrs
    port   = var.port + 1
    suffix = var.suffix
    text   = local.text
    sq     = local.squares
    tmpl   = local.tmpl
    file   = file("${path.module}/files/hello.txt")
  }
}

resource "terraform_data" "each" {
  for_each = toset(var.cidrs)
  input    = "${each.key}/${terraform_data.this.input.name}"
}

module "sub" {
  source = "./sub"
  parent = terraform_data.this.input.name
}

output "name" {
  value = local.name
}

output "ids" {
  value = [for k, v in terraform_data.each : v.input]
}

output "sub" {
  value = module.sub.value
}
