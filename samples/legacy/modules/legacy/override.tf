# Ops override: a newer region and a longer retention, without touching the vendor's files.
provider "aws" {
  region = "us-east-2"
}

variable "retention_seconds" {
  default = 1209600
}
