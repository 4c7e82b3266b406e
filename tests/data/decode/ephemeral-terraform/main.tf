ephemeral "test" "a" {
  lifecycle {
    create_before_destroy = true # ERROR: Invalid ephemeral resource lifecycle argument
  }
}
