# A module call with an override file: Terraform ignores arguments the module does not declare
# (`bogus`, `extra`), while the same call without an override is "Unsupported argument". The
# output leaves them out (the differential tester's class D).
module "c" {
  source = "./m"
  bogus  = 1
}

output "o" {
  value = module.c.o
}
