"""The inline promise on generated trees: an applied state plans only moves after ``--inline``.

Each tree (``tests/support/inline_trees.py``: ``terraform_data`` modules with typed variables,
objects with ``optional()`` defaults, reused directories, ``count`` calls) is applied with
Terraform, built with ``flatten build --inline`` as a whole and with ``--module`` on each call,
and planned against the applied state. Every run must plan only ``no-op`` actions with equal
outputs, or be refused by flatten with an error (for example ``--module`` on a call with
``count``). The long run of the same check is ``scripts/inline-check``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.inline_check import check_mode, check_tree
from support.inline_trees import tree
from support.oracle import terraform


@pytest.mark.oracle
@pytest.mark.parametrize("seed", [0, 1, 3])
def test_applied_tree_plans_only_moves(seed: int, tmp_path: Path) -> None:
    outcomes = check_tree(tree(seed), tmp_path, terraform())
    assert outcomes[0].kind != "invalid", outcomes[0].detail
    bad = [o for o in outcomes if o.kind not in ("ok", "refused")]
    assert not bad, bad
    assert outcomes[0].kind == "ok", outcomes[0]  # the whole tree inlines


# A handwritten tree for the bugs of issue 17 item 5: template directives in a module argument,
# path.module of an in-root module outside modules/ (./child), a child output with sensitive =
# true read by a root output without it, an empty list for a list(string) variable, and a kept
# call (a count known only at plan time) moved up from an inlined module, which must not get a
# providers entry its module does not declare.
_HAND = {
    "main.tf": """
module "c" {
  source = "./child"
  name   = "%{ if true }x%{ endif }-%{ for s in ["a", "b"] }${s}%{ endfor }"
  list   = []
}
output "here" {
  value = module.c.here
}
output "name" {
  value = module.c.name
}
""",
    "child/main.tf": """
variable "name" {
  type = string
}
variable "list" {
  type = list(string)
}
resource "terraform_data" "r" {
  input = [var.name, var.list]
}
module "k" {
  count  = length(["k"]) # known at plan time: stays a call
  source = "../modules/k"
}
output "here" {
  value = path.module
}
output "name" {
  value     = terraform_data.r.output
  sensitive = true
}
""",
    "modules/k/main.tf": 'resource "terraform_data" "k" {\n  input = "k"\n}\n',
}


@pytest.mark.oracle
def test_handwritten_tree_plans_only_moves(tmp_path: Path) -> None:
    outcomes = check_tree(_HAND, tmp_path, terraform())
    kinds = {o.mode: o.kind for o in outcomes}
    # module.c.module.k has count, so --module on it is refused; everything else inlines exactly.
    assert kinds == {"whole": "ok", "module.c": "ok", "module.c.module.k": "refused"}, outcomes


@pytest.mark.oracle
def test_ephemeral_variable_keeps_the_call(tmp_path: Path) -> None:
    files = dict(_HAND)
    files["child/main.tf"] += (
        'variable "eph" {\n  type      = string\n  default   = "e"\n  ephemeral = true\n}\n'
    )
    outcomes = check_tree(files, tmp_path, terraform(), modules=False)
    assert outcomes[0].kind == "ok", outcomes  # module.c stays a call (a warning), so nothing changes
    refused = check_mode(tmp_path / "src", tmp_path, terraform(), "module.c")
    assert refused.kind == "refused"
    assert 'variable "eph" is ephemeral' in refused.detail


_ALIASES = """
terraform {
  required_providers {
    terraform = {
      source                = "terraform.io/builtin/terraform"
      configuration_aliases = [terraform.log]
    }
  }
}
"""

# A kept call (count) inside an inlined module, whose module needs a configuration_aliases name.
_PROVIDERS = {
    "main.tf": """
terraform {
  required_providers {
    terraform = { source = "terraform.io/builtin/terraform" }
  }
}
provider "terraform" {
  alias = "log"
}
module "a" {
  source    = "./modules/a"
  providers = { terraform.log = terraform.log }
}
""",
    "modules/a/main.tf": _ALIASES
    + """
module "b" {
  source    = "../b"
  count     = length(["b"]) # known at plan time: stays a call
  providers = { terraform.log = terraform.log }
}
resource "terraform_data" "a" {
  provider = terraform.log
}
""",
    "modules/b/main.tf": _ALIASES
    + """
resource "terraform_data" "b" {
  provider = terraform.log
}
resource "terraform_data" "b2" {}
""",
}


@pytest.mark.oracle
def test_kept_call_keeps_configuration_aliases(tmp_path: Path) -> None:
    outcomes = check_tree(_PROVIDERS, tmp_path, terraform())
    kinds = {o.mode: o.kind for o in outcomes}
    assert kinds == {"whole": "ok", "module.a": "ok", "module.a.module.b": "refused"}, outcomes


def test_provider_validation_runs_on_the_inlined_graph(tmp_path: Path) -> None:
    # A graph whose kept call lost its providers entry: the check refuses it before anything is
    # written, with Terraform's reason, instead of emitting output Terraform rejects.
    from flatten.inline import _check
    from flatten.lang.options import Options
    from flatten.providers import wire_providers
    from flatten.stages.graph import build_graph

    for rel, text in _PROVIDERS.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(
            text.replace("  providers = { terraform.log = terraform.log }\n}\nresource", "}\nresource")
        )
    graph, _ = build_graph(tmp_path, options=Options())
    wiring, _ = wire_providers(graph, options=Options(), validate=False)
    diags, _ = _check(wiring, graph, [], Options())
    assert [d.summary for d in diags.errors] == ["Inlining changed the provider wiring"]
    assert "terraform.log" in diags.errors[0].detail


# nullable = false on an any-typed variable whose default and argument have different types: a
# literal argument is used as it is, a null one or a reference that is null at run time picks the
# default.
_NULLABLE = {
    "main.tf": """
variable "none" {
  type    = any
  default = null
}
module "a" {
  source = "./m"
  v      = { a = 1, b = ["x"] }
  w      = var.none
  x      = null
}
output "a" {
  value = module.a.out
}
""",
    "m/main.tf": """
variable "v" {
  type     = any
  default  = "s"
  nullable = false
}
variable "w" {
  type     = any
  default  = []
  nullable = false
}
variable "x" {
  type     = any
  default  = "s"
  nullable = false
}
resource "terraform_data" "r" {
  input = [var.v, var.w, var.x]
}
output "out" {
  value = terraform_data.r.output
}
""",
}


@pytest.mark.oracle
def test_not_nullable_any_variable(tmp_path: Path) -> None:
    outcomes = check_tree(_NULLABLE, tmp_path, terraform())
    assert [o.kind for o in outcomes] == ["ok", "ok"], outcomes


# A variable validation and an output precondition of an inlined module: with the value applied
# they pass, and the output plans only moves; a value that breaks either one fails the plan of
# the inlined output with an error (exit 1, the rule's error message shown), as it fails the
# original's, where a check block would only warn.
_RULES = {
    "main.tf": """
variable "name" {
  type    = string
  default = "prod"
}
module "a" {
  source = "./m"
  v      = var.name
}
output "o" {
  value = module.a.o
}
""",
    "m/main.tf": """
variable "v" {
  type = string
  validation {
    condition     = length(var.v) > 2
    error_message = "v is ${var.v}, too short."
  }
}
resource "terraform_data" "r" {
  input = var.v
}
output "o" {
  value = terraform_data.r.input
  precondition {
    condition     = var.v != "nope"
    error_message = "v must not be nope."
  }
}
""",
}


@pytest.mark.oracle
def test_failing_validation_fails_the_plan(tmp_path: Path) -> None:
    tf = terraform()
    outcomes = check_tree(_RULES, tmp_path, tf)
    assert [o.kind for o in outcomes] == ["ok", "ok"], outcomes
    for out in ("out-whole", "out-module_a"):
        for value, message in (("ab", "v is ab, too short."), ("nope", "v must not be nope.")):
            original = tf.run("plan", "-no-color", "-input=false", f"-var=name={value}", cwd=tmp_path / "src")
            inlined = tf.run("plan", "-no-color", "-input=false", f"-var=name={value}", cwd=tmp_path / out)
            assert original.returncode == inlined.returncode == 1, inlined.stdout
            assert "Error: " in inlined.stderr
            assert message in " ".join(inlined.stderr.split()), inlined.stderr


# Calls with a literal count: each instance inlined on its own (moved from module.k[i]), the
# caller's module.k read as the tuple of the instances (an index, a splat, the whole value), and
# depends_on = [module.k]; a nested counted call inside is inlined too.
_COUNTED = {
    "main.tf": """
module "k" {
  source = "./m"
  count  = 2
  v      = "i${count.index}"
}
resource "terraform_data" "after" {
  input      = module.k[1].o
  depends_on = [module.k]
}
output "first" {
  value = module.k[0].o
}
output "all" {
  value = module.k[*].o
}
output "whole" {
  value = module.k
}
""",
    "m/main.tf": """
variable "v" {
  type = string
}
resource "terraform_data" "r" {
  input = var.v
}
module "n" {
  source = "../n"
  count  = 1
}
output "o" {
  value = terraform_data.r.output
}
""",
    "n/main.tf": 'resource "terraform_data" "x" {}\n',
}


@pytest.mark.oracle
def test_literal_count_calls_plan_only_moves(tmp_path: Path) -> None:
    outcomes = check_tree(_COUNTED, tmp_path, terraform())
    kinds = {o.mode: o.kind for o in outcomes}
    assert kinds == {"whole": "ok", "module.k": "ok", "module.k.module.n": "ok"}, outcomes


# Calls with a literal for_each: a set of strings and an object of constants, each instance
# inlined on its own (moved from module.k["a"]), the caller's module.k read as the object of the
# instances (a key, a for expression, values(), the whole value), depends_on = [module.k], and a
# nested keyed call inside.
_KEYED = {
    "main.tf": """
module "k" {
  source   = "./m"
  for_each = toset(["b", "a b", "b"])
  v        = "i-${each.key}-${each.value}"
}
module "o" {
  source   = "./m"
  for_each = { one = { n = 1 }, two = { n = 2 } }
  v        = "n${each.value.n}-${each.key}"
}
resource "terraform_data" "after" {
  input      = module.k["b"].o
  depends_on = [module.k]
}
output "first" {
  value = module.k["a b"].o
}
output "all" {
  value = [for key, m in module.k : "${key}=${m.o}"]
}
output "values" {
  value = values(module.o)[*].o
}
output "whole" {
  value = module.o
}
""",
    "m/main.tf": """
variable "v" {
  type = string
}
resource "terraform_data" "r" {
  input = var.v
}
module "n" {
  source   = "../n"
  for_each = toset(["x"])
}
output "o" {
  value = terraform_data.r.output
}
""",
    "n/main.tf": 'resource "terraform_data" "x" {}\n',
}


@pytest.mark.oracle
def test_literal_for_each_calls_plan_only_moves(tmp_path: Path) -> None:
    outcomes = check_tree(_KEYED, tmp_path, terraform())
    kinds = {o.mode: o.kind for o in outcomes}
    assert kinds == {
        "whole": "ok",
        "module.k": "ok",
        "module.o": "ok",
        "module.k.module.n": "ok",
        "module.o.module.n": "ok",
    }, outcomes
