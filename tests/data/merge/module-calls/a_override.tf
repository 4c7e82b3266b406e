module "m" {
  version = "2.0.0"
  foo     = "a_override"
  new     = "a_override"
  providers = {
    aws = aws.b
  }
  lifecycle {
    enabled = false
  }
}
