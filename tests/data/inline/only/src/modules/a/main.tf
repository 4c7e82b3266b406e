variable "word" {
  type = string
}

module "b" {
  source = "../b"
  word   = "${var.word}-b"
}

module "c" {
  source = "../c"
  word   = "${var.word}-c"
}

output "words" {
  value = [module.b.word, module.c.word]
}
