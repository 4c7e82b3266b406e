"""What Terraform and OpenTofu mean, with no I/O: the model, options, diagnostics, types, versions."""
