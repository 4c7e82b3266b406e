# OpenTofu dialect (the "tofu-" prefix): provider for_each and instance keys.
locals {
  regions = toset(["a", "b"])
}

provider "aws" {
  alias    = "by_region"
  for_each = local.regions
}

resource "aws_vpc" "ok" {
  for_each = toset(["x"])
  provider = aws.by_region["a"]
}

resource "aws_vpc" "bad" {
  for_each = toset(["x"])
  provider = aws.nowhere[each.key] # ERROR: Invalid resource provider configuration
}

resource "aws_vpc" "same" {
  for_each = local.regions # WARNING: Provider configuration for_each matches resource
  provider = aws.by_region[each.key]
}
