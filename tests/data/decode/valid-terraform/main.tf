terraform {
  required_version = "~> 0.12.0"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 4.0"
    }
  }
}

variable "x" {
  validation {
    condition     = var.x != var.y
    error_message = "x"
  }
}

resource "aws_instance" "a" {
  count = 1
  lifecycle {
    replace_triggered_by = [aws_instance.b]
  }
}

module "m" {
  source = "./m"
  count  = 1
}
