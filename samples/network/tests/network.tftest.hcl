# `terraform test` in the output runs these as it does here: flatten carries test files along and
# points each run's module source at where the module is in the output.
mock_provider "aws" {}

run "one_network_per_environment" {
  command = plan

  assert {
    condition     = length(module.network) == 2
    error_message = "Expected a network for staging and one for production."
  }
}

run "the_network_module_alone" {
  command = plan

  module {
    source = "./modules/network"
  }

  variables {
    name = "unit"
    cidr = "10.99.0.0/16"
    azs  = 1
  }
}
