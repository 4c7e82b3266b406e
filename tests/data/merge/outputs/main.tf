output "a" {
  value       = 1
  description = "base"
  sensitive   = true
}

output "b" {
  value = 2
}
