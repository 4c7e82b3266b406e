output "tags" {
  value = {
    ManagedBy = "flatten-sample"
  }
}
