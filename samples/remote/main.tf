# A root module whose children all come from remote packages, served on loopback by
# tests/sources/test_sample.py: a registry module, a git repository and an HTTP archive.
# .terraform/modules holds what `terraform init` would have installed (see README.md).

terraform {
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0"
    }
  }
}

module "network" {
  source  = "127.0.0.1:18080/acme/network/aws"
  version = "~> 1.1"

  name = "demo"
  cidr = "10.0.0.0/16"
}

module "storage" {
  source = "git::git://127.0.0.1:18081/storage.git?ref=v1.0.0"

  bucket_name = "demo-artifacts"
}

module "dns" {
  source = "http://127.0.0.1:18082/archives/dns.tar.gz//modules/zone"

  zone_name = "demo.example.com"
  vpc_id    = module.network.vpc_id
}

output "bucket" {
  value = module.storage.bucket_arn
}
