terraform {
  required_providers {
    aws = {
      source = "hashicorp/aws"
    }
    google = {
      source = "hashicorp/google"
    }
  }
}

resource "aws_vpc" "x" {}

resource "google_compute_network" "y" {}

module "grandchild" {
  source = "./grandchild"
}
