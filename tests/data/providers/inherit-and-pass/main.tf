# A providers map does not cancel inheritance of the defaults it does not mention (tf #35781).
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

provider "aws" {
  region = "us-east-1"
}

provider "aws" {
  alias  = "west"
  region = "us-west-2"
}

provider "google" {
  project = "p"
}

module "child" {
  source = "./modules/child"
  providers = {
    aws = aws.west
  }
}
