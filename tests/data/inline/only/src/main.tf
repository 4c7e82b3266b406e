module "a" {
  source = "./modules/a"
  word   = "only"
}

output "words" {
  value = module.a.words
}
