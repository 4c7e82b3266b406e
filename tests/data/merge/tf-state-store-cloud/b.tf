terraform {
  state_store "fs" { # ERROR: Conflicting 'cloud' and 'state_store' configuration blocks are present
    provider "fs" {}
  }
}
