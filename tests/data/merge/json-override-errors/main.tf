resource "test" "a" {
  count = 1
}

output "o" {
  value = 1
}

module "m" {
  source = "./m"
}

variable "v" {
  type    = number
  default = 1
}
