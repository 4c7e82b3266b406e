# Issue 14 item 11: HCL ignores newlines and comments inside a quoted template's `${ }` and
# `%{ }` sequences; python-hcl2 rejects a line break there outside brackets.
locals {
  names = ["a", "bb", "ccc"]
  n     = 2

  wrapped = "prefix-${
    local.n
  }-suffix"

  commented = "${local.n # the count
  }"

  blocked = "${local.n /* a block comment */}"

  slashed = "x${upper(local.names[0]) // "a quote in a comment"
  }y"

  stripped = "[${~
    local.n
  ~} ]"

  looped = "%{ for c in
  local.names }<${c}>%{ endfor }"

  chosen = "%{ if
    local.n == 2 }two%{ else }other%{ endif
  }"

  # Terraform 0.11-era style found in public modules: an operator or `?`/`:` at a line start.
  chained = "${
    local.n == 1 ? "one" :
    local.n == 2 ? "two" :
    ""}"

  flag = "${
    local.n == 1 ||
    local.n == 2
    ? 1 : 0}"

  picked = "${
    local.n > 1
    ? "big"
    : "small"
  }"

  commented_choice = "${
    local.n != 2
      ? "no"
      #a comment between the branches
      : "yes"
  }"

  storage = "${
    replace(
      lower(
        "${
          local.names[0]
          }-${
          upper(local.names[1])
        }"
      ),
      "/[^a-z]/",
      ""
    )
  }"

  nested = "${join("-", [for c in local.names : "${
    upper(c)
  }"])}"
}

resource "terraform_data" "r" {
  input = local.wrapped
}

output "all" {
  value = [local.wrapped, local.commented, local.slashed, local.stripped, local.looped, local.chosen, local.nested, local.chained, local.flag, local.picked, local.commented_choice, local.storage, local.blocked]
}
