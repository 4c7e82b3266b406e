variable "on" {
  default = true
}

resource "terraform_data" "a" {
  lifecycle {
    enabled = var.on
    create_before_destroy = true
  }
}

resource "terraform_data" "b" {
  lifecycle {
    enabled = var.on # WARNING: Override leaves both enabled and for_each set
  }
}

resource "terraform_data" "c" {
  for_each = toset(["x"])
}

data "terraform_remote_state" "d" {
  backend = "local"
  lifecycle {
    enabled = var.on
  }
}

module "m" {
  source = "./m"
  lifecycle {
    enabled = var.on
  }
}
