"""One list of a block's expressions for the cycle graph and the validate walk (stages/expressions.py)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.files import write_tree

from flatten.build import build
from flatten.lang import model
from flatten.lang.model import Block, JsonValue
from flatten.lang.options import Options
from flatten.stages import dependencies, expressions, references_check
from flatten.stages.expressions import block_expressions
from flatten.stages.load import load_module

MAIN = """
variable "n" {
  type = number
  validation {
    condition     = var.n >= 0
    error_message = "n"
  }
}
locals {
  m     = { a = { id = "x" }, "${var.n}" = ["${var.n}", 2] }
  flat  = { b = "${local.m}", a = "plain" }
  names = [for k, v in local.m : "${k}-${v.id}" if v.id != ""]
}
resource "terraform_data" "a" {
  count = var.n
  input = { tags = { x = "${var.n}" }, list = ["${local.flat}", "lit"] }
  dynamic "x" {
    for_each = local.names
    iterator = it
    content {
      v = { k = "${it.value}" }
    }
  }
  lifecycle {
    replace_triggered_by = [terraform_data.b.id]
    ignore_changes       = [input]
  }
  provisioner "local-exec" {
    when    = destroy
    command = "echo ${self.id}"
  }
}
resource "terraform_data" "b" {
  input = { n = ["${var.n}"] }
}
output "o" {
  value = { a = [terraform_data.a[0].id], b = local.names }
  precondition {
    condition     = length({ x = var.n }) > 0
    error_message = "o"
  }
}
"""


def _module(tmp_path: Path) -> model.Module:
    root = write_tree(tmp_path / "root", {"main.tf": MAIN})
    loaded, _ = load_module(root, root=root, options=Options())
    assert not [d for d in (*loaded.load_diags, *loaded.merge_diags) if d.severity.name == "ERROR"]
    return loaded.module


def _templates(value: JsonValue) -> list[str]:
    return [t for t in model.json_strings(value, items_last_first=True) if "${" in t or "%{" in t]


def _attributes(block: Block, within: tuple[str, ...] = ()) -> list[tuple[str, tuple[str, ...]]]:
    found = [(a.name, within) for a in block.body.attributes]
    for nested in block.body.blocks:
        found.extend(_attributes(nested, (*within, nested.type)))
    return found


def test_a_block_lists_every_attribute_with_its_templates_and_where_it_is(tmp_path: Path) -> None:
    for block in _module(tmp_path).blocks:
        listed = block_expressions(block)
        # Each body's attributes, then its blocks' (depth first): the order both walks read in.
        assert [(e.attr.name, tuple(b.type for b in e.within)) for e in listed.expressions] == _attributes(
            block
        )
        for e in listed.expressions:
            # The templates in json_strings' order (an object's items last to first), objects of
            # strings (read without the general walk) included.
            assert list(e.texts) == _templates(e.attr.value), e.attr.name
    resource = next(b for b in _module(tmp_path).blocks if b.labels == ("terraform_data", "a"))
    listed = block_expressions(resource)
    assert listed.bound == {"x", "it"}  # the block's label, and its iterator
    own = listed.own("count")
    assert own is not None and own.texts == ("${var.n}",)
    assert [b.type for b, _ in listed.nested()] == ["dynamic", "lifecycle", "provisioner"]


def test_the_checks_list_each_value_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The cycle graph and the validate walk read each attribute of a module's blocks from one
    # list (issue 41): no value of a resource, variable, locals or output block has its strings
    # listed twice in a build (the walks used to list each value once each).
    root = write_tree(tmp_path / "root", {"main.tf": MAIN})
    listed: dict[int, int] = {}
    real = model.json_strings

    def counting(value: JsonValue, **kwargs: bool) -> object:
        listed[id(value)] = listed.get(id(value), 0) + 1
        return real(value, **kwargs)

    for module in (expressions, dependencies, references_check):
        monkeypatch.setattr(module, "json_strings", counting)
    pipeline = importlib.import_module("flatten.build")
    modules: list[model.Module] = []
    real_check = pipeline.wiring_checks

    def keeping(graph: object, *args: object, **kwargs: object) -> object:
        modules.extend(node.module for node in graph.walk())  # type: ignore[attr-defined]
        return real_check(graph, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline, "wiring_checks", keeping)
    _, diags = build(root, options=Options(terraform_version=(1, 15)))
    assert not diags.has_errors, [d.summary for d in diags]
    monkeypatch.undo()
    values = [
        e.attr.value
        for m in modules
        for block in m.blocks
        if block.type in ("resource", "variable", "locals", "output")
        for e in block_expressions(block).expressions
        if not isinstance(e.attr.value, str)
    ]
    assert len(values) > 5
    assert any(listed.get(id(v)) for v in values), "the list reads the values with json_strings"
    assert {id(v): listed.get(id(v), 0) for v in values if listed.get(id(v), 0) > 1} == {}


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.sampled_from(["", "lit", "${var.a}", "%{ if x }y%{ endif }", "a-${local.b}", "$${x}"]),
)
_keys = st.sampled_from(["k", "${var.k}", "%{x}", "plain"])
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_keys, inner, max_size=4)),
    max_leaves=12,
)


@settings(max_examples=500, deadline=None)
@given(value=_values)
def test_the_fast_paths_list_what_the_general_walk_lists(value: JsonValue) -> None:
    # An object of scalars and a list of strings are read without json_strings' walk: the same
    # templates, in the same order (an object's items last to first, a list's in order).
    assert list(expressions._templates(value)) == _templates(value)
