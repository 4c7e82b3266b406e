# Issue 14 item 11: HCL ignores newlines inside a `for` expression, also before `=>`
# (seen in cloudposse terraform-aws-components modules/tgw/hub).
locals {
  names = ["a", "bb", "ccc"]

  by_name = { for c in local.names : c
    => length(c) }

  commented = { for c in local.names : upper(c) # the key

    => c... if c != "bb" }

  slashed = { for i, c in local.names : c // the key
  => i }

  plain = { for c in local.names : c =>
  c }
}

resource "terraform_data" "r" {
  input = local.by_name
}

output "all" {
  value = [local.by_name, local.commented, local.slashed, local.plain]
}
