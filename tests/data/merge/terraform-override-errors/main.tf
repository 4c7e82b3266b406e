terraform {
  encryption {
    method "unencrypted" "m" {}
  }
}
