terraform {
  required_version = "< 2.0"
  experiments      = [example]
  state_store "fs" {
    provider "fs" {}
    path = "state"
  }
  provider_meta "aws" {
    module_name = "ignored"
  }
}
