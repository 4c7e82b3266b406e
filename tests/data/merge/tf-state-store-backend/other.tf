terraform {
  state_store "other" { # ERROR: Duplicate 'state_store' configuration block
    provider "fs" {}
  }
}

action "aws_lambda_invoke" "x" {} # ERROR: Duplicate action "aws_lambda_invoke" configuration
