"""Provider wiring of inlined trees that Terraform must accept (issue 31 items 1-4).

Each tree is applied with Terraform, built with ``--inline`` as a whole and with ``--module`` on
each call, and re-planned against the applied state (``support.inline_check``): every run must
plan only moves. A ``for_each`` call named by ``--module`` is refused (it stays a call).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.inline_check import check_tree
from support.oracle import terraform

_BUILTIN = """
terraform {
  required_providers {
    terraform = { source = "terraform.io/builtin/terraform"%s }
  }
}
"""


def _req(aliases: str = "") -> str:
    return _BUILTIN % (f", configuration_aliases = [{aliases}]" if aliases else "")


def _kinds(files: dict[str, str], tmp_path: Path) -> dict[str, str]:
    outcomes = check_tree(files, tmp_path, terraform())
    assert outcomes[0].kind != "invalid", outcomes[0].detail
    return {o.mode: o.kind + ("" if o.kind == "ok" else f": {o.detail}") for o in outcomes}


# Item 1: a kept for_each call whose call passes only terraform.src; inlining l into it must name
# that configuration terraform.src (the module's working name), for the resource and for the
# providers map of the nested for_each call, not the inherited default "terraform".
_KEPT_FOR_EACH = {
    "main.tf": _req()
    + """
module "c" {
  source    = "./c"
  for_each  = toset(["x"])
  providers = { terraform.src = terraform }
}
""",
    "c/main.tf": _req("terraform.src")
    + """
module "l" {
  source    = "../l"
  providers = { terraform.dst = terraform.src }
}
""",
    "l/main.tf": _req("terraform.dst")
    + """
resource "terraform_data" "r" {
  provider = terraform.dst
}
module "k" {
  source    = "../k"
  for_each  = toset(["y"])
  providers = { terraform = terraform.dst }
}
""",
    "k/main.tf": _req() + 'resource "terraform_data" "k" {}\n',
}


@pytest.mark.oracle
def test_kept_for_each_module_uses_its_passed_name(tmp_path: Path) -> None:
    kinds = _kinds(_KEPT_FOR_EACH, tmp_path)
    assert kinds["whole"] == "ok"
    assert kinds["module.c.module.l"] == "ok"


# Item 2: a configuration alias the kept call's module declares and never uses must still be
# passed to it after the call moves up.
_UNUSED_ALIAS = {
    "main.tf": _req()
    + """
provider "terraform" {
  alias = "src"
}
module "a" {
  source    = "./a"
  providers = { terraform.src = terraform.src }
}
""",
    "a/main.tf": _req("terraform.src")
    + """
resource "terraform_data" "a" {
  provider = terraform.src
}
module "k" {
  source    = "../k"
  for_each  = toset(["x"])
  providers = { terraform.log = terraform.src }
}
""",
    "k/main.tf": _req("terraform.log") + 'resource "terraform_data" "k" {}\n',
}


@pytest.mark.oracle
def test_unused_configuration_alias_is_still_passed(tmp_path: Path) -> None:
    kinds = _kinds(_UNUSED_ALIAS, tmp_path)
    assert kinds["whole"] == "ok"
    assert kinds["module.a"] == "ok"


# Item 3: --module module.a leaves the counted call k a call, moved up to the root; k (no
# required_providers) inherited terraform.x as its default, so the root passes it explicitly
# and declares "terraform" in k, where a providers map would otherwise take the name for
# hashicorp/terraform.
_COUNTED_DEFAULT = {
    "main.tf": _req()
    + """
provider "terraform" {
  alias = "x"
}
module "a" {
  source    = "./a"
  providers = { terraform = terraform.x }
}
""",
    "a/main.tf": _req()
    + """
resource "terraform_data" "a" {}
module "k" {
  source = "../k"
  count  = 2
}
""",
    "k/main.tf": 'resource "terraform_data" "k" {}\n',
}


@pytest.mark.oracle
def test_kept_counted_call_gets_the_inherited_configuration(tmp_path: Path) -> None:
    kinds = _kinds(_COUNTED_DEFAULT, tmp_path)
    assert kinds == {"whole": "ok", "module.a": "ok", "module.a.module.k": "ok"}, kinds


# Item 4: provider-defined functions of an inlined module, by the child's local name ("tf") for
# the provider the caller calls "terraform" or declares nowhere.
_FUNCTIONS = {
    "main.tf": """
module "c" {
  source = "./c"
}
module "d" {
  source = "./d"
}
output "o" {
  value = [module.c.o, module.d.o]
}
""",
    "c/main.tf": """
terraform {
  required_providers {
    tf = { source = "terraform.io/builtin/terraform" }
  }
}
resource "terraform_data" "r" {
  provider = tf
  input    = provider::tf::encode_expr({ a = 1 })
}
output "o" {
  value = "${provider::tf::encode_expr("x")}-${terraform_data.r.output}"
}
""",
    "d/main.tf": _req()
    + """
output "o" {
  value = provider::terraform::encode_expr([1])
}
""",
}


@pytest.mark.oracle
def test_provider_functions_follow_the_callers_name(tmp_path: Path) -> None:
    kinds = _kinds(_FUNCTIONS, tmp_path)
    assert kinds == {"whole": "ok", "module.c": "ok", "module.d": "ok"}, kinds
