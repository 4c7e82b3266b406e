variable "n" {
  type    = number
  default = 2
}
locals {
  names = toset(["a", "b"])
  doc   = <<-EOT
    hello ${var.n}
      indented
  EOT
}
resource "terraform_data" "counted" {
  count = var.n
  input = { idx = count.index, lit = "$${not}" }
  lifecycle {
    create_before_destroy = true
    ignore_changes        = [input]
  }
}
resource "terraform_data" "each" {
  for_each         = local.names
  input            = "${each.key}-${each.value}"
  triggers_replace = [terraform_data.counted[0].id]
  depends_on       = [terraform_data.counted]
  provisioner "local-exec" {
    when       = destroy
    command    = "echo bye"
    on_failure = continue
  }
  lifecycle {
    replace_triggered_by = [terraform_data.counted[0]]
  }
}
moved {
  from = terraform_data.old
  to   = terraform_data.counted
}
check "sane" {
  assert {
    condition     = var.n > 0
    error_message = "n must be positive"
  }
}
output "doc" {
  value = local.doc
}
