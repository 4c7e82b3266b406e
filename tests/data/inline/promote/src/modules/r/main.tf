variable "n" {
  type = number
}

module "inner" {
  source = "../b"
  seed   = "r${var.n}"
}

output "v" {
  value = module.inner.out
}
