"""The tree shapes ``scripts/inline-bench`` times, also planned by the inline tests.

``calls_tree(n)``: a root calling ``n`` modules directly, each module its own directory with one
variable, one ``terraform_data`` resource and one output (issue 31).

``counted_tree(n)``: a root calling one small module ``n`` times (issue 42 item 1): every 10th
call with a literal ``count`` of 1 to 3 (its argument reads ``count.index``), every 100th with a
literal ``for_each`` instead (reading ``each.key``), every 7th passed the provider alias
``terraform.alt`` (no ``required_providers`` anywhere); every 50th call ``depends_on`` the call
before it, and a root output reads every 5th call's output (``[0]`` of a counted call, ``["a"]``
of a ``for_each`` one).
"""

from __future__ import annotations

__all__ = ["calls_tree", "counted_tree"]

_ONE = (
    'variable "v" {\n  type = string\n}\nresource "terraform_data" "r" {\n  input = var.v\n}\n'
    'output "o" {\n  value = terraform_data.r.output\n}\n'
)

_SMALL = """variable "v" {
  type = string
}
variable "tag" {
  type    = string
  default = "t"
}
resource "terraform_data" "r" {
  input = "${var.v}-${var.tag}"
}
output "o" {
  value = terraform_data.r.output
}
"""


def calls_tree(n: int) -> dict[str, str]:
    """Return the ``calls`` shape with ``n`` calls, ``{relative path: text}``."""
    files = {f"modules/m{i}/main.tf": _ONE for i in range(n)}
    files["main.tf"] = "".join(
        f'module "m{i}" {{\n  source = "./modules/m{i}"\n  v      = "x{i}"\n}}\n' for i in range(n)
    )
    return files


def counted_tree(n: int) -> dict[str, str]:
    """Return the ``counted`` shape with ``n`` calls, ``{relative path: text}``."""
    parts = ['provider "terraform" {\n  alias = "alt"\n}\n']
    reads = []
    for i in range(n):
        lines = [f'module "m{i}" {{', '  source = "./modules/small"', f'  v      = "x{i}"']
        index = ""
        if i % 100 == 0:
            lines += ['  for_each = toset(["a", "b"])', "  tag      = each.key"]
            index = '["a"]'
        elif i % 10 == 0:
            lines += [f"  count  = {1 + (i // 10) % 3}", '  tag    = "n${count.index}"']
            index = "[0]"
        if i % 7 == 0:
            lines.append("  providers = { terraform = terraform.alt }")
        if i % 50 == 1:
            lines.append(f"  depends_on = [module.m{i - 1}]")
        lines.append("}\n")
        parts.append("\n".join(lines))
        if i % 5 == 0:
            reads.append(f"module.m{i}{index}.o")
    parts.append('output "reads" {\n  value = [' + ", ".join(reads) + "]\n}\n")
    return {"modules/small/main.tf": _SMALL, "main.tf": "".join(parts)}
