ephemeral "random_password" "p" {
  length = 16
}
