module "m" {
  source  = "hashicorp/consul/aws"
  version = "1.0.0"
  kept    = "primary"
  foo     = "primary"
  providers = {
    aws = aws.a
  }
  depends_on = [terraform_data.x]
  lifecycle {
    enabled = true
  }
}

resource "terraform_data" "x" {}
