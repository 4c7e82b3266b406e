module "k" {
  source = "../k"
  count  = length(["a", "b"]) # known at plan time: stays a call
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
