terraform {
  backend "local" {}
  cloud {}
  state_store "fs" { # ERROR: Only one of 'cloud', 'state_store', or 'backend' configuration blocks are allowed
    provider "fs" {}
  }
}
