terraform {
  required_version = "~> 0.12.0"
}
