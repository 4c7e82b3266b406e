terraform {
  required_providers {
    usererror = {
      source = "foo/terraform-provider-foo" # ERROR: Invalid provider type
    }
    badname = {
      source = "foo/terraform-foo" # ERROR: Invalid provider type
    }
    tofuprefix = {
      source = "foo/opentofu-foo" # ERROR: Invalid provider type
    }
    toolong = {
      source = "a/b/c/d" # ERROR: Invalid provider source string
    }
    badns = {
      source = "foo--bar/thing" # ERROR: Invalid provider namespace
    }
    badhost = {
      source = "bad_host.example/ns/thing" # ERROR: Invalid provider source hostname
    }
    legacy = "~> 1.0"
    badversion = {
      source  = "hashicorp/badversion"
      version = "not a version" # ERROR: Invalid version constraint
    }
    Upper = { # ERROR: Invalid provider local name
      source = "hashicorp/upper"
    }
    aliased = {
      source                = "hashicorp/aliased"
      configuration_aliases = [aliased.one, other.two] # ERROR: Invalid configuration_aliases value
    }
    ok = {
      source  = "registry.example.com:443/ns/ok"
      version = ">= 1.0, < 2.0"
    }
  }
  provider_meta "chunky_bacon" { # ERROR: Invalid provider local name
  }
}

required_providers { # ERROR: Invalid required_providers block
}
