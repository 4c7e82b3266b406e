terraform {
  required_providers { # ERROR: Duplicate required providers configuration
    aws = { source = "hashicorp/aws" }
  }
  backend "local" {} # ERROR: Duplicate backend configuration
  cloud {}
  encryption {} # ERROR: Duplicate encryption configuration
  provider_meta "aws" {} # ERROR: Duplicate provider_meta block
}

provider "aws" {} # ERROR: Duplicate provider configuration
provider "aws" { # ERROR: Duplicate provider configuration
  alias = "w"
}

variable "v" { # ERROR: Duplicate variable declaration
  default = "second"
}

locals {
  l = 2 # ERROR: Duplicate local value definition
}

output "o" { # ERROR: Duplicate output definition
  value = 2
}

module "m" { # ERROR: Duplicate module call
  source = "./m"
}

resource "aws_instance" "web" { # ERROR: Duplicate resource "aws_instance" configuration
  ami = "second"
}

data "aws_ami" "d" {} # ERROR: Duplicate data "aws_ami" configuration

ephemeral "random_password" "e" {} # ERROR: Duplicate ephemeral resource "random_password" configuration

check "c" { # ERROR: Duplicate check "c" configuration
  assert {
    condition     = var.ok
    error_message = "x"
  }
}

check "d" {
  data "aws_ami" "d" {} # ERROR: Duplicate data "aws_ami" configuration
  assert {
    condition     = var.ok
    error_message = "x"
  }
}

import { # ERROR: Duplicate import configuration for "aws_instance.web"
  to = aws_instance.web
  id = "b"
}
