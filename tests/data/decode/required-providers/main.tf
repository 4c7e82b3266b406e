terraform {
  required_providers {
    usererror = { # ERROR: Invalid provider type
      source = "foo/terraform-provider-foo"
    }
    badname = { # ERROR: Invalid provider type
      source = "foo/terraform-foo"
    }
    tofuprefix = { # ERROR: Invalid provider type
      source = "foo/opentofu-foo"
    }
    toolong = { # ERROR: Invalid provider source string
      source = "a/b/c/d"
    }
    badns = { # ERROR: Invalid provider namespace
      source = "foo--bar/thing"
    }
    badhost = { # ERROR: Invalid provider source hostname
      source = "bad_host.example/ns/thing"
    }
    legacy = "~> 1.0"
    badversion = { # ERROR: Invalid version constraint
      source  = "hashicorp/badversion"
      version = "not a version"
    }
    Upper = { # ERROR: Invalid provider local name
      source = "hashicorp/upper"
    }
    aliased = { # ERROR: Invalid configuration_aliases value
      source                = "hashicorp/aliased"
      configuration_aliases = [aliased.one, other.two]
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
