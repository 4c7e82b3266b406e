terraform {
  cloud {
    organization = "ignored"
  }
  cloud { # ERROR: Duplicate cloud configurations
    organization = "ignored-too"
  }
}
