"""Static traversals in Terraform's JSON form (issue 14, item 1).

Native syntax accepts HCL's legacy index steps (``aws_instance.a.0``) in arguments that Terraform
reads as static traversals (``depends_on``, ``ignore_changes``, ``provider``, ``moved``, ``providers``
maps, ``configuration_aliases``). In a ``.tf.json`` file Terraform reads those strings with
``hclsyntax.ParseTraversalAbs``, which has no legacy index: ``"aws_instance.a.0"`` is "Invalid
expression". Both native readers must write ``aws_instance.a[0]``, and the JSON reader must reject
what Terraform rejects. The whole-tree check against Terraform itself is the oracle case
``tests/data/oracle/legacy-index-steps``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from flatten.lang.model import Attribute, Block, Body
from flatten.lang.options import Options
from flatten.syntax import hcl_fast
from flatten.syntax.hcl import parse_native
from flatten.syntax.jsonsyntax import parse_json
from flatten.syntax.references import has_legacy_index, json_traversal

OPTS = Options()

NATIVE = """
resource "t" "n" {
  provider   = aws.west
  depends_on = [aws_instance.a.0, module.m, aws_instance.b.1.id]

  lifecycle {
    ignore_changes = [scaling_config.0.desired_size, tags["Name.0"]]
  }
}

moved {
  from = aws_instance.old.0
  to   = aws_instance.new[0]
}

module "m" {
  source    = "./m"
  providers = { aws = aws.west }
}
"""

EXPECTED = {
    "depends_on": ["aws_instance.a[0]", "module.m", "aws_instance.b[1].id"],
    "ignore_changes": ["scaling_config[0].desired_size", 'tags["Name.0"]'],
    "from": "aws_instance.old[0]",
    "to": "aws_instance.new[0]",
}


def _values(body: Body) -> dict[str, Any]:
    """Every attribute of the body, nested blocks included, by name."""
    found: dict[str, Any] = {}
    for item in body.items:
        if isinstance(item, Attribute):
            found[item.name] = item.expr.value
        elif isinstance(item, Block):
            found.update(_values(item.body))
    return found


@pytest.mark.parametrize("reader", ["python-hcl2", "fast"])
def test_native_legacy_index_steps_become_json_index_steps(reader: str) -> None:
    if reader == "fast":
        result = hcl_fast.read_fast(NATIVE, "main.tf", options=OPTS)
        assert result is not None, "the fast reader declined a file it reads"
        body, diags = result
    else:
        body, diags = parse_native(NATIVE, "main.tf", options=OPTS)
    assert not diags.has_errors, list(diags)
    values = _values(body)
    assert {k: values[k] for k in EXPECTED} == EXPECTED
    assert values["provider"] == "aws.west"
    for value in (*values["depends_on"], *values["ignore_changes"], values["from"]):
        assert not has_legacy_index(value), value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("aws_instance.a.0", "aws_instance.a[0]"),
        ("a.10.b.2", "a[10].b[2]"),
        ("x.0.1", "x[0][1]"),  # HCL reads "0.1" as two legacy steps here, not a number
        ('a["x.0"].b', 'a["x.0"].b'),  # a string key is not a step
        ("a[0].b", "a[0].b"),
        ("aws.west", "aws.west"),
    ],
)
def test_json_traversal(text: str, expected: str) -> None:
    assert json_traversal(text) == expected
    assert not has_legacy_index(expected)


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("aws_instance.a[0]", True),
        ('module.m["k"].out', True),
        ("aws_instance.a.0", False),  # Terraform: Invalid expression
        ("a.b.0.c", False),
        ("${aws_instance.a}", False),
    ],
)
def test_json_reader_rejects_what_terraform_rejects(value: str, valid: bool) -> None:
    src = json.dumps({"resource": {"t": {"n": {"depends_on": [value]}}}})
    _, diags = parse_json(src, "main.tf.json", options=OPTS)
    summaries = [d.summary for d in diags]
    assert summaries == ([] if valid else ["Invalid expression"])
