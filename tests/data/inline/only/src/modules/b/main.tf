variable "word" {
  type = string
}

resource "terraform_data" "w" {
  input = var.word
}

output "word" {
  value = terraform_data.w.input
}
