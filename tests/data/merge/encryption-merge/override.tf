terraform {
  encryption {
    key_provider "pbkdf2" "k" {
      passphrase = "override-passphrase"
    }
    method "unencrypted" "u" {}
    state {
      enforced = false
      fallback {
        method = method.unencrypted.u
      }
    }
  }
}
