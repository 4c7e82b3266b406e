"""A variable default that is a template of constants (issue 31 item 6).

Terraform evaluates a variable's ``default`` with no variables and no functions
(``attr.Expr.Value(nil)``), so a template whose interpolations and directives are constants is a
constant: ``"[%{ if true }yes%{ else }no%{ endif }]"`` is ``"[yes]"``. flatten reads it to the
same value, in the fast reader and the reference reader alike, and still refuses a default that
uses a variable or a function.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.files import write_tree
from support.oracle import terraform

from flatten.lang.options import Options
from flatten.syntax import hcl_fast
from flatten.syntax.hcl import parse_native

CASES = {
    "if_else": ('"[%{ if true }yes%{ else }no%{ endif }]"', "[yes]"),
    "if_false_no_else": ('"a%{ if false }b%{ endif }c"', "ac"),
    "nested": ('"%{ if true }%{ if false }x%{ else }y%{ endif }%{ endif }"', "y"),
    "for_tuple": ('"%{ for s in ["a", "b"] }<${s}>%{ endfor }"', "<a><b>"),
    "for_key": ('"%{ for k, s in ["a", "b"] }${k}=${s};%{ endfor }"', "0=a;1=b;"),
    "for_empty": ('"[%{ for s in [] }${s}%{ endfor }]"', "[]"),
    "strip": ('"x %{~ if true ~} y %{~ endif ~} z"', "xyz"),
    "interpolated_number": ('"n${1}-${true}"', "n1-true"),
    "string_condition": ('"%{ if "true" }t%{ endif }"', "t"),
}


def _default(text: str, fast: bool) -> object:
    src = f'variable "v" {{\n  default = {text}\n}}\n'
    if fast:
        read = hcl_fast.read_fast(src, "main.tf", options=Options())
        assert read is not None, "the fast reader declined"
        body, diags = read
    else:
        body, diags = parse_native(src, "main.tf", options=Options())
    assert not diags.has_errors, [d.summary for d in diags]
    attr = body.blocks[0].body.attribute("default")
    assert attr is not None
    return attr.value


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "reference"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_constant_template_default(name: str, fast: bool) -> None:
    text, expected = CASES[name]
    assert _default(text, fast) == expected


@pytest.mark.parametrize(
    "text", ['"%{ if var.x }a%{ endif }"', '"${upper("a")}"', '"%{ for s in var.l }${s}%{ endfor }"']
)
def test_non_constant_template_default_is_still_refused(text: str) -> None:
    src = f'variable "v" {{\n  default = {text}\n}}\n'
    _, diags = parse_native(src, "main.tf", options=Options())
    assert diags.has_errors
    assert diags.errors[0].summary in ("Variables not allowed", "Function calls not allowed")


@pytest.mark.oracle
def test_constant_template_defaults_plan_as_in_terraform(tmp_path: Path) -> None:
    lines = []
    for name, (text, _) in sorted(CASES.items()):
        lines += [f'variable "{name}" {{', f"  default = {text}", "}"]
        lines += [f'output "{name}" {{', f"  value = var.{name}", "}"]
    src = write_tree(tmp_path / "src", {"main.tf": "\n".join(lines) + "\n"})
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "flatten", "build", "--out", str(out), str(src)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    tf = terraform()
    planned = []
    for where in (src, out):
        result = tf.run("plan", "-input=false", "-no-color", "-out=plan.bin", cwd=where)
        assert result.returncode == 0, result.stderr
        shown = tf.run("show", "-json", "plan.bin", cwd=where)
        values = {k: v["after"] for k, v in json.loads(shown.stdout)["output_changes"].items()}
        planned.append(values)
    assert planned[0] == planned[1] == {name: value for name, (_, value) in CASES.items()}
