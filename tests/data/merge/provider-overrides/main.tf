provider "aws" {
  region  = "us-east-1"
  profile = "base"
  version = "~> 4.0"
}

provider "aws" {
  alias  = "west"
  region = "us-west-2"
  assume_role {
    role_arn = "base"
  }
}
