ephemeral "test" "a" {
  connection { # ERROR: Invalid configuration block for ephemeral resource
  }
  provisioner "local-exec" { # ERROR: Invalid configuration block for ephemeral resource
  }
  lifecycle {
    create_before_destroy = true # ERROR: Invalid lifecycle configuration for ephemeral resource
    prevent_destroy       = true # ERROR: Invalid lifecycle configuration for ephemeral resource
    precondition {
      condition     = ephemeral.test.b.id != ""
      error_message = "x"
    }
  }
}
