output "instance_ids" {
  description = "IDs of the web instances."
  value       = aws_instance.web[*].id
}

output "security_group_id" {
  value = aws_security_group.web.id
}
