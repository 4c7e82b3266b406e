provider "aws" {
  region  = "eu-west-1"
  version = "~> 5.0" # WARNING: Version constraints inside provider configuration blocks are deprecated
}

provider "aws" {
  alias = "west"
  assume_role {
    role_arn = "override"
  }
}

provider "google" {
  project = "added"
  for_each = {}
}

provider "aws" { # ERROR: Missing base provider configuration for override
  alias  = "typo"
  region = "x"
}
