terraform {
  backend "local" {}
  cloud {
    organization = "acme"
  }
}
