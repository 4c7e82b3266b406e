provider "aws" {
  region  = "us-east-1"
  profile = "base"
  version = "~> 4.0" # WARNING: Version constraints inside provider configuration blocks are deprecated
}

provider "aws" {
  alias  = "west"
  region = "us-west-2"
  assume_role {
    role_arn = "base"
  }
}
