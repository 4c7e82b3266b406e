ephemeral "random_password" "p" {
  length = 8
  special = true
}
