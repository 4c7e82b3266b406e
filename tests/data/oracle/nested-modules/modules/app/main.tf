variable "name" {
  type = string
}

variable "replicas" {
  type = number
}

resource "terraform_data" "replica" {
  count = var.replicas
  input = {
    name  = var.name
    index = count.index
    conf  = file("${path.module}/conf/app.conf")
  }
}

module "shared" {
  source = "../shared"
  label  = var.name
}

output "summary" {
  value = {
    replicas = length(terraform_data.replica)
    shared   = module.shared.tag
  }
}
