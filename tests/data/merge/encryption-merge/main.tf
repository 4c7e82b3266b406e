terraform {
  encryption {
    key_provider "pbkdf2" "k" {
      passphrase = "base-passphrase-long"
      key_length = 32
    }
    method "aes_gcm" "m" {
      keys = key_provider.pbkdf2.k
    }
    state {
      method   = method.aes_gcm.m
      enforced = true
    }
  }
}
