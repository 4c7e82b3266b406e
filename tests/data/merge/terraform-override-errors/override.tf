terraform {
  backend "local" {}
  backend "s3" {} # ERROR: Duplicate backend configuration
  encryption {
    state {
      method = method.unencrypted.m
    }
  }
  encryption { # ERROR: Duplicate encryption configuration
  }
}

language { # ERROR: Language selections in override file
}
