module "k" {
  source = "../k"
  count  = 2
  label  = "k${count.index}"
}

module "b" {
  source = "../b"
  seed   = "b"
}

resource "terraform_data" "from_b" {
  input = module.b.out
}

output "k_labels" {
  value = module.k[*].label
}
