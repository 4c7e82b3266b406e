output "a" {
  value       = 10
  description = ""
  sensitive   = false
}

output "b" {
  depends_on = [terraform_data.x] # ERROR: Unsupported override
  precondition { # ERROR: Can't override precondition blocks
    condition     = true
    error_message = "x"
  }
}

output "c" { # ERROR: Missing base output definition to override
  value = 3
}
