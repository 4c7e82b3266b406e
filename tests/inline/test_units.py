"""Inline mode without Terraform: what stays a call and why, ``--module``, and what gets rewritten."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.inline import inline_build

from flatten.inline import inline_graph, move_address, split_address
from flatten.lang.options import Options
from flatten.providers import wire_providers
from flatten.stages.graph import build_graph

CHILD = """
variable "v" {
  type = string
}

resource "terraform_data" "r" {
  input = var.v
}

output "o" {
  value = terraform_data.r.input
}
"""


def _root(files: dict[str, str], tree: Any) -> Path:
    root: Path = tree(files)
    return root


def _main(files: dict[str, bytes]) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(files["main.tf.json"])
    return doc


def test_only_names_no_call(tree: Any) -> None:
    root = _root({"main.tf": 'module "a" {\n  source = "./a"\n  v = "x"\n}\n', "a/main.tf": CHILD}, tree)
    options = Options()
    graph, _ = build_graph(root, options=options)
    wiring, _ = wire_providers(graph, options=options)
    result, diags = inline_graph(graph, wiring, options=options, only="module.b")
    assert [d.summary for d in diags.errors] == ["No such module call"]
    assert result.graph is graph


def test_only_names_a_call_with_a_count_known_at_plan_time(tree: Any) -> None:
    main = 'variable "n" {\n  default = 1\n}\nmodule "a" {\n  source = "./a"\n  count = var.n\n  v = "x"\n}\n'
    root = _root({"main.tf": main, "a/main.tf": CHILD}, tree)
    options = Options()
    graph, _ = build_graph(root, options=options)
    wiring, _ = wire_providers(graph, options=options)
    _, diags = inline_graph(graph, wiring, options=options, only="module.a")
    assert [d.summary for d in diags.errors] == ["Module call not inlined"]
    assert "count is not a literal number" in diags.errors[0].detail


def test_literal_count_becomes_one_inlined_call_per_instance(tree: Any) -> None:
    main = """
module "a" {
  source = "./a"
  count  = 2
  v      = "i${count.index}"
}
resource "terraform_data" "after" {
  depends_on = [module.a]
}
output "first" {
  value = module.a[0].o
}
"""
    root = _root({"main.tf": main, "a/main.tf": CHILD}, tree)
    _, files, diags = inline_build(root, only="module.a")
    assert not diags.has_errors, diags
    doc = _main(files)
    assert doc["locals"]["a__0__var__v"] == "i${0}"
    assert doc["locals"]["a__1__var__v"] == "i${1}"
    assert doc["moved"] == [
        {"from": "module.a[0].terraform_data.r", "to": "terraform_data.a__0__r"},
        {"from": "module.a[1].terraform_data.r", "to": "terraform_data.a__1__r"},
    ]
    # module.a is Terraform's tuple of the instances' objects.
    assert doc["output"]["first"]["value"] == "${[{o = local.a__0__out__o}, {o = local.a__1__out__o}][0].o}"
    assert doc["resource"]["terraform_data"]["after"]["depends_on"] == [
        "terraform_data.a__0__r",
        "terraform_data.a__1__r",
    ]


def test_for_each_call_known_only_at_plan_time_is_reported(tree: Any) -> None:
    main = (
        'variable "keys" {\n  default = ["k"]\n}\n'
        'module "a" {\n  source = "./a"\n  for_each = toset(var.keys)\n  v = each.key\n}\n'
    )
    root = _root({"main.tf": main, "a/main.tf": CHILD}, tree)
    result, _, diags = inline_build(root)
    assert [k.address for k in result.kept] == ["module.a"]
    assert "for_each is not a set of string literals" in result.kept[0].reason
    assert [d.summary for d in diags] == ["Module call not inlined"]


def test_literal_for_each_set_becomes_one_inlined_call_per_key(tree: Any) -> None:
    main = """
module "a" {
  source   = "./a"
  for_each = toset(["y", "x", "y", "a b"])
  v        = "i-${each.key}-${each.value}"
}
resource "terraform_data" "after" {
  depends_on = [module.a]
}
output "x" {
  value = module.a["x"].o
}
"""
    root = _root({"main.tf": main, "a/main.tf": CHILD}, tree)
    result, files, diags = inline_build(root, only="module.a")
    assert not diags.has_errors, diags
    assert not result.kept
    doc = _main(files)
    # Instances in the keys' lexical order, one each (a set), named from the key.
    assert [m["from"] for m in doc["moved"]] == [
        'module.a["a b"].terraform_data.r',
        'module.a["x"].terraform_data.r',
        'module.a["y"].terraform_data.r',
    ]
    assert [m["to"] for m in doc["moved"]] == [
        "terraform_data.a__a_b__r",
        "terraform_data.a__x__r",
        "terraform_data.a__y__r",
    ]
    assert doc["locals"]["a__x__var__v"] == 'i-x-${("x")}'
    # module.a is Terraform's object of the instances, keyed as the instances are.
    assert doc["output"]["x"]["value"] == (
        '${{"a b" = {o = local.a__a_b__out__o}, "x" = {o = local.a__x__out__o}, '
        '"y" = {o = local.a__y__out__o}}["x"].o}'
    )
    assert doc["resource"]["terraform_data"]["after"]["depends_on"] == [
        "terraform_data.a__a_b__r",
        "terraform_data.a__x__r",
        "terraform_data.a__y__r",
    ]


def test_literal_for_each_object_gives_each_value(tree: Any) -> None:
    main = (
        'module "a" {\n  source = "./a"\n'
        '  for_each = { one = "1", two = { n = 2 } }\n  v = jsonencode(each.value)\n}\n'
    )
    root = _root({"main.tf": main, "a/main.tf": CHILD}, tree)
    result, files, diags = inline_build(root)
    assert not diags.has_errors, diags
    assert not result.kept
    locals_ = _main(files)["locals"]
    # (converted to the variable's type, string, as Terraform does)
    assert locals_["a__one__var__v"] == '${tostring((jsonencode(("1"))))}'
    assert locals_["a__two__var__v"] == '${tostring((jsonencode(({"n" = 2}))))}'


@pytest.mark.parametrize(
    "for_each",
    [
        '["x"]',
        "toset([1, 2])",
        'toset(["x", var.k])',
        "{ a = var.k }",
        "toset(" + repr([f"k{i}" for i in range(17)]).replace("'", '"') + ")",
    ],
)
def test_for_each_not_literal_stays_a_call(tree: Any, for_each: str) -> None:
    main = (
        'variable "k" {\n  default = "k"\n}\n'
        f'module "a" {{\n  source = "./a"\n  for_each = {for_each}\n  v = "x"\n}}\n'
    )
    root = _root({"main.tf": main, "a/main.tf": CHILD}, tree)
    result, _, _ = inline_build(root)
    assert [k.address for k in result.kept] == ["module.a"]


def test_rewrites_everything_that_names_the_child(tree: Any) -> None:
    root = _root(
        {
            "main.tf": """
module "a" {
  source = "./a"
  v      = "x"
}

resource "terraform_data" "uses" {
  input      = [module.a.o, module.a]
  depends_on = [module.a]
}

import {
  to = module.a.terraform_data.r
  id = "abc"
}
""",
            "a/main.tf": CHILD
            + """
resource "terraform_data" "dyn" {
  input = { for k, v in { a = 1 } : k => v }
  dynamic "terraform_data" {
    for_each = [var.v]
    content {
      x = terraform_data.value
      y = terraform_data.r
    }
  }
}

data "terraform_remote_state" "s" {
  backend = "local"
}

resource "terraform_data" "d" {
  input = data.terraform_remote_state.s.outputs
  lifecycle {
    replace_triggered_by = [terraform_data.r.id]
    ignore_changes       = [input]
  }
}

removed {
  from = terraform_data.gone
  lifecycle {
    destroy = false
  }
}
""",
        },
        tree,
    )
    result, files, diags = inline_build(root)
    assert not diags
    doc = _main(files)
    uses = doc["resource"]["terraform_data"]["uses"]
    assert uses["input"] == ["${local.a__out__o}", "${{o = local.a__out__o}}"]
    assert uses["depends_on"] == [
        "terraform_data.a__r",
        "terraform_data.a__dyn",
        "data.terraform_remote_state.a__s",
        "terraform_data.a__d",
    ]
    assert doc["import"] == [{"id": "abc", "to": "terraform_data.a__r"}]
    dyn = doc["resource"]["terraform_data"]["a__dyn"]
    # The dynamic block's iterator is named like the resource type: inside content it stays as written.
    assert dyn["dynamic"] == [
        {
            "terraform_data": {
                "content": [{"x": "${terraform_data.value}", "y": "${terraform_data.r}"}],
                "for_each": ["${local.a__var__v}"],
            }
        }
    ]
    d = doc["resource"]["terraform_data"]["a__d"]
    assert d["input"] == "${data.terraform_remote_state.a__s.outputs}"
    assert d["lifecycle"] == [
        {"ignore_changes": ["input"], "replace_triggered_by": ["terraform_data.a__r.id"]}
    ]
    assert doc["removed"] == [{"from": "module.a.terraform_data.gone", "lifecycle": [{"destroy": False}]}]
    assert result.new_address("module.a.data.terraform_remote_state.s") == "data.terraform_remote_state.a__s"
    assert ("module.a.data.terraform_remote_state.s", "data.terraform_remote_state.a__s") not in result.moves


def test_names_do_not_collide(tree: Any) -> None:
    root = _root(
        {
            "main.tf": """
locals {
  a__var__v = 1
}

resource "terraform_data" "a__r" {}

module "a" {
  source = "./a"
  v      = "x"
}
""",
            "a/main.tf": CHILD,
        },
        tree,
    )
    _, files, diags = inline_build(root)
    assert not diags.has_errors
    doc = _main(files)
    assert sorted(doc["resource"]["terraform_data"]) == ["a__r", "a__r_2"]
    assert doc["locals"]["a__var__v_2"] == "x"
    assert doc["moved"] == [{"from": "module.a.terraform_data.r", "to": "terraform_data.a__r_2"}]


def test_validation_becomes_a_failing_local_and_defaults_are_escaped(tree: Any) -> None:
    root = _root(
        {
            "main.tf": 'module "a" {\n  source = "./a"\n}\n',
            "a/main.tf": """
variable "v" {
  type    = string
  default = "$${not} %%{either}"
  validation {
    condition     = length(var.v) > 0
    error_message = "v is ${var.v}"
  }
}

variable "n" {
  type      = number
  default   = 2
  sensitive = true
}
""",
        },
        tree,
    )
    _, files, _ = inline_build(root)
    doc = _main(files)
    assert doc["locals"]["a__var__v"] == "$${not} %%{either}"
    assert doc["locals"]["a__var__n"] == "${sensitive(2)}"
    assert "check" not in doc  # a check would only warn; a failing validation is an error
    assert doc["locals"]["a__var__v__validation"] == (
        '${(length(local.a__var__v) > 0) ? null : tobool("Invalid value for variable \\"v\\" of module.a: '
        'v is ${local.a__var__v}")}'
    )
    assert "type number" in doc["locals"]["//"]


@pytest.mark.parametrize(
    ("address", "moves", "expected"),
    [
        ("module.a.t.n", [("module.a.t.n", "t.a__n")], "t.a__n"),
        ('module.a.t.n["k"]', [("module.a.t.n", "t.a__n")], 't.a__n["k"]'),
        ("module.a.module.k[1].t.n", [("module.a.module.k", "module.a__k")], "module.a__k[1].t.n"),
        ("module.k[0].module.c.t.n", [("module.k.module.c.t.n", "module.k.t.c__n")], "module.k[0].t.c__n"),
        ("module.b.t.n", [("module.a.t.n", "t.a__n")], "module.b.t.n"),
        ("data.t.n", [("module.a.t.n", "t.a__n")], "data.t.n"),
    ],
)
def test_move_address(address: str, moves: list[tuple[str, str]], expected: str) -> None:
    assert move_address(address, moves) == expected


def test_split_address() -> None:
    assert split_address('module.a["x.y"].data.t.n[0]') == [
        ("module.a", '["x.y"]'),
        ("data.t.n", "[0]"),
    ]
    assert split_address("not an address!") is None


_SHARED = {
    "main.tf": """
module "a" {
  source = "./x"
  count  = length(["a"])
  v      = "p"
}
module "b" {
  source = "./x"
  count  = length(["b"])
  v      = "q"
}
""",
    "x/main.tf": """
variable "v" {
  type = string
}
module "inner" {
  source = "../inner"
  w      = var.v
}
""",
    "inner/main.tf": """
variable "w" {
  type = string
}
resource "terraform_data" "r" {
  input = var.w
}
""",
}


def test_directory_inlined_alike_is_written_once(tree: Any) -> None:
    # Both calls of x stay calls and get inner inlined the same way: one copy (the "//" notes
    # are the same in both), not a refusal and not x__2.
    result, files, diags = inline_build(_root(_SHARED, tree))
    assert not diags.has_errors, diags
    assert sorted(result.inlined) == ["module.a.module.inner", "module.b.module.inner"]
    assert not result.variants
    assert not [p for p in files if "__2" in p]


def test_directory_inlined_differently_is_written_per_result(tree: Any) -> None:
    # --module inlines inner into a's copy of x only: x is written twice, b's call points at the
    # copy that keeps the call, and --module is not refused.
    result, files, diags = inline_build(_root(_SHARED, tree), only="module.a.module.inner")
    assert not diags.has_errors, diags
    assert result.inlined == ("module.a.module.inner",)
    assert sorted(files) == [
        "flatten.manifest.json",
        "inner/main.tf.json",
        "main.tf.json",
        "x/main.tf.json",
        "x__2/main.tf.json",
    ]
    sources = {name: call["source"] for name, call in _main(files)["module"].items()}
    assert sources == {"a": "./x", "b": "./x__2"}
    assert "module" not in json.loads(files["x/main.tf.json"])  # a's copy: inner inlined
    assert "inner" in json.loads(files["x__2/main.tf.json"])["module"]  # b's copy keeps the call


@pytest.mark.parametrize(
    ("block", "reason"),
    [
        (
            'variable "e" {\n  type = string\n  default = "s"\n  ephemeral = true\n}\n',
            'variable "e" is ephemeral',
        ),
        ('output "e" {\n  value = "s"\n  ephemeral = true\n}\n', 'output "e" is ephemeral'),
    ],
)
def test_ephemeral_variable_or_output_keeps_the_call(block: str, reason: str, tree: Any) -> None:
    # A local cannot be ephemeral: inlining would put the value in state, so the call stays.
    root = _root(
        {"main.tf": 'module "a" {\n  source = "./a"\n  v = "x"\n}\n', "a/main.tf": CHILD + block}, tree
    )
    result, files, diags = inline_build(root)
    assert [k.address for k in result.kept] == ["module.a"]
    assert reason in result.kept[0].reason
    assert [d.summary for d in diags] == ["Module call not inlined"]
    assert "module" in _main(files)


def test_a_call_the_final_check_rejects_stays_a_call_and_the_rest_is_inlined(
    tree: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Fault injection: the check after inlining (which compares the provider wiring before and
    # after) reports module.a the first time. module.a must stay a call, with a warning, and
    # module.b still be inlined: one such call never fails the whole build.
    import flatten.inline as inline
    from flatten.lang.diagnostics import Diagnostic, Diagnostics

    real = inline._check
    calls: list[int] = []

    def faulty(*args: Any, **kwargs: Any) -> tuple[Diagnostics, set[str]]:
        calls.append(1)
        if len(calls) == 1:
            injected = Diagnostics()
            injected.append(Diagnostic.error("Inlining changed the provider wiring", "injected", None))
            return injected, {"module.a"}
        return real(*args, **kwargs)

    monkeypatch.setattr(inline, "_check", faulty)
    main = 'module "a" {\n  source = "./a"\n  v = "x"\n}\nmodule "b" {\n  source = "./a"\n  v = "y"\n}\n'
    root = _root({"main.tf": main, "a/main.tf": CHILD}, tree)
    result, files, diags = inline_build(root)
    assert len(calls) == 2  # inlined again without module.a
    assert not diags.has_errors, diags
    assert [k.address for k in result.kept] == ["module.a"]
    assert "the check after inlining" in result.kept[0].reason
    assert [d.summary for d in diags] == ["Module call not inlined"]
    assert list(result.inlined) == ["module.b"]
    doc = _main(files)
    assert set(doc["module"]) == {"a"}
    assert "b__r" in doc["resource"]["terraform_data"]
