terraform {
  state_store "fs" { # ERROR: Conflicting 'state_store' and 'backend' configuration blocks are present
    provider "fs" {}
  }
  backend "local" {}
}

action "aws_lambda_invoke" "x" {}
