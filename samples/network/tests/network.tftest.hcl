# `terraform test` in the output runs these as it does here: flatten carries test files along
# (docs/files.md). Planning needs AWS credentials, as for the configuration itself.

run "one_network_per_environment" {
  command = plan

  assert {
    condition     = length(module.network) == 2
    error_message = "Expected a network for staging and one for production."
  }
}

run "two_sandboxes" {
  command = plan

  assert {
    condition     = length(module.sandbox) == 2
    error_message = "Expected two sandboxes."
  }
}
