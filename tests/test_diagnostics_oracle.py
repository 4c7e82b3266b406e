"""Terraform as the oracle for diagnostics: flatten reports what ``terraform validate`` reports.

Each case is a small tree that Terraform warns about or rejects; flatten's diagnostics (summary,
severity and detail) must equal Terraform's (issue 14).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import write_tree
from oracle import terraform

from flatten.build import build
from flatten.model import Range
from flatten.options import Options

_BUILTIN = (
    'terraform {\n  required_providers {\n    terraform = { source = "terraform.io/builtin/terraform" }\n'
    "  }\n}\n"
)
_ALIAS_X = (
    "terraform {\n  required_providers {\n    terraform = {\n"
    '      source = "terraform.io/builtin/terraform"\n'
    "      configuration_aliases = [terraform.x]\n    }\n  }\n}\n"
)
_USES_X = 'resource "terraform_data" "a" {\n  provider = terraform.x\n}\n'
_PASS_Y = 'module "a" {\n  source = "./a"\n  providers = { terraform.x = terraform.y }\n}\n'

CASES: dict[str, dict[str, str]] = {
    # Terraform names itself in this warning; the OpenTofu dialect names OpenTofu.
    "backend-in-child": {
        "main.tf": 'module "m" {\n  source = "./m"\n}\n',
        "m/main.tf": 'terraform {\n  backend "local" {}\n}\n',
    },
    # A legacy index step is native syntax only: in JSON Terraform wants `a[0]`.
    "legacy-index-in-json": {
        "main.tf.json": json.dumps(
            {
                "resource": {
                    "terraform_data": {
                        "a": {"count": 1},
                        "b": {"depends_on": ["terraform_data.a.0"]},
                    }
                }
            }
        ),
    },
    # Item 6: a sibling's required_providers types the child side of every call of the caller
    # (resolveProviderTypes' "fill in parent module calls too"): the same providers item is an
    # error with the sibling and a warning without it.
    "sibling-types-other-calls": {
        "main.tf": 'provider "terraform" {\n  alias = "y"\n}\n'
        + _PASS_Y
        + 'module "s" {\n  source = "./s"\n}\n',
        "a/main.tf": _USES_X,
        "s/main.tf": _BUILTIN,
    },
    "no-sibling-only-warns": {
        "main.tf": 'provider "terraform" {\n  alias = "y"\n}\n' + _PASS_Y,
        "a/main.tf": _USES_X,
    },
}


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(CASES))
def test_diagnostics_equal_terraform_validate(name: str, tmp_path: Path) -> None:
    tf = terraform()
    root = write_tree(tmp_path / name, CASES[name])
    _, diags = build(root, options=Options())
    ours = sorted((d.severity.value, d.summary, d.detail, _where(d.range)) for d in diags)

    tf.run("init", "-backend=false", "-input=false", "-no-color", cwd=root)
    verdict = json.loads(tf.run("validate", "-json", "-no-color", cwd=root).stdout)
    theirs = sorted(
        (d["severity"], d["summary"], d["detail"], _where_json(d.get("range")))
        for d in verdict["diagnostics"]
    )
    assert theirs, "the case must make Terraform say something"
    assert ours == theirs


def _where(rng: Range | None) -> str:
    if rng is None:
        return ""
    return f"{rng.filename}:{rng.start.line},{rng.start.column}-{rng.end.line},{rng.end.column}"


def _where_json(rng: dict[str, Any] | None) -> str:
    if not rng:
        return ""
    start, end = rng["start"], rng["end"]
    return f"{rng['filename']}:{start['line']},{start['column']}-{end['line']},{end['column']}"
