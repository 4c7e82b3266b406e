variable "prefix" {
  type    = string
  default = "d"
}

variable "opt" {
  type    = string
  default = null
}

variable "nn" {
  type     = string
  nullable = false
  default  = "fallback"
}

locals {
  name = "${var.prefix}-a"
}

resource "terraform_data" "this" {
  input = [local.name, var.opt, var.nn]
}

resource "terraform_data" "legacy" {
  input = "legacy"
}

module "b" {
  source     = "../b"
  name       = local.name
  depends_on = [terraform_data.this]
}

data "terraform_remote_state" "snap" {
  backend = "local"
  config = {
    path = "${path.module}/snapshot.json"
  }
}

resource "terraform_data" "from_snap" {
  input = data.terraform_remote_state.snap.outputs.greeting
}

check "snap" {
  assert {
    condition     = data.terraform_remote_state.snap.outputs.greeting != ""
    error_message = "The snapshot has no greeting."
  }
}

# A rename inside the module, written before inlining.
moved {
  from = terraform_data.old
  to   = terraform_data.this
}

output "b_all" {
  value = module.b
}

output "secret" {
  value     = "s-${local.name}"
  sensitive = true
}

output "greeting" {
  value = terraform_data.from_snap.input
}
