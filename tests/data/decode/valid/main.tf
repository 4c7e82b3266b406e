terraform {
  required_providers {
    aws = {
      source                = "hashicorp/aws"
      version               = "~> 5.0"
      configuration_aliases = [aws.west]
    }
    legacy = ">= 1.0"
    cloud  = { source = "tf.example.com/awesomecorp/happy-cloud" }
  }
  provider_meta "aws" {
    hello = "world"
  }
}

language {
  edition = tofu2024
  compatible_with {
    opentofu = ">= 1.12.0"
  }
}

variable "region" {
  type        = string
  default     = "us-east-1"
  sensitive   = true
  nullable    = false
  description = "Region, with a literal $${var.x} in it."
  deprecated  = "Use location instead."
  validation {
    condition     = contains(["us-east-1", "eu-west-1"], var.region)
    error_message = "Unknown region ${var.region}; ${local.hint}."
  }
}

variable "obj" {
  type    = object({ a = string, b = optional(list(object({ c = number })), []) })
  default = { a = "x", b = [{ c = 1 }] }
}

locals {
  hint   = "pick one"
  names  = { for k, v in var.obj : k => upper(v) if v != null }
  joined = "%{for n in local.list}${n},%{endfor}"
  doc    = <<-EOT
    region ${var.region}
  EOT
}

provider "aws" {
  region = var.region
}

provider "aws" {
  alias    = "by_region"
  for_each = toset(["a", "b"])
  region   = each.key
}

resource "aws_instance" "web" {
  count    = 2
  provider = aws.by_region["a"]
  lifecycle {
    create_before_destroy = true
    prevent_destroy       = var.protect
    ignore_changes        = [tags, ami]
    replace_triggered_by  = [aws_instance.other[count.index].id, aws_instance.other.arn]
    precondition {
      condition     = var.region != ""
      error_message = "Needs ${var.region}."
    }
    postcondition {
      condition     = self.ami != ""
      error_message = "Bad ${self.id} from ${aws_instance.other.id}."
    }
  }
  connection {
    host = self.public_ip
    user = each.key
  }
  provisioner "remote-exec" {
    when       = destroy
    on_failure = continue
    inline     = ["echo ${self.id} ${count.index} ${path.module} ${terraform.workspace}"]
  }
  provisioner "local-exec" {
    command = "echo ${local.hint} ${provider::aws::arn_parse(var.region)}"
    connection {
      host = var.region
    }
  }
  dynamic "ebs_block_device" {
    for_each = var.disks
    content {
      device_name = ebs_block_device.value
    }
  }
}

data "aws_ami" "x" {
  for_each = var.m
  lifecycle {
    postcondition {
      condition     = self.id != data.aws_ami.y.id
      error_message = "x"
    }
  }
}

ephemeral "aws_secret" "s" {
  lifecycle {
    enabled = var.on
  }
}

module "child" {
  source     = "./child"
  for_each   = var.m
  depends_on = [aws_instance.web]
  providers = {
    aws      = aws.by_region[each.key]
    aws.west = aws
  }
}

output "out" {
  value       = { a = aws_instance.web[0].id, "b" = local.names }
  sensitive   = true
  ephemeral   = false
  deprecated  = "Gone soon."
  description = "Output $${with} braces"
  precondition {
    condition     = length(local.names) > 0
    error_message = "No names."
  }
}

check "health" {
  data "http" "h" {
    url = "https://example.com"
  }
  assert {
    condition     = data.http.h.status_code == 200
    error_message = "down"
  }
}

import {
  to       = aws_instance.web[0]
  id       = "i-123"
  provider = aws
}

moved {
  from = aws_instance.old
  to   = aws_instance.web
}
