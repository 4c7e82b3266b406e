# Runs against a mocked AWS provider; flatten copies this file into the output unchanged.
mock_provider "aws" {}

run "staging_by_default" {
  command = plan

  assert {
    condition     = var.environment == "staging"
    error_message = "The default environment is staging."
  }
}

run "rejects_an_unknown_environment" {
  command = plan

  variables {
    environment = "qa"
  }

  expect_failures = [var.environment]
}
