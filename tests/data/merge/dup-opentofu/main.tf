terraform {
  required_providers {
    aws = { source = "hashicorp/aws" }
  }
  backend "s3" {} # ERROR: Both a backend and a cloud configuration are present
  encryption {}
  provider_meta "aws" {}
}

provider "aws" {}
provider "aws" {
  alias = "w"
}

variable "v" {
  default = "first"
}

locals {
  l = 1
}

output "o" {
  value = 1
}

module "m" {
  source = "./m"
}

resource "aws_instance" "web" {
  ami = "first"
}

data "aws_ami" "d" {}

ephemeral "random_password" "e" {}

check "c" {
  assert {
    condition     = var.ok
    error_message = "x"
  }
}

import {
  to = aws_instance.web
  id = "a"
}
