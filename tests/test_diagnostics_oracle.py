"""Terraform as the oracle for diagnostics: flatten reports what ``terraform validate`` reports.

Each case is a small tree that Terraform warns about or rejects; flatten's diagnostics (summary,
severity and detail) must equal Terraform's (issue 14).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import write_tree
from oracle import terraform

from flatten.build import build
from flatten.options import Options

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
}


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(CASES))
def test_diagnostics_equal_terraform_validate(name: str, tmp_path: Path) -> None:
    tf = terraform()
    root = write_tree(tmp_path / name, CASES[name])
    _, diags = build(root, options=Options())
    ours = sorted((d.severity.value, d.summary, d.detail) for d in diags)

    tf.run("init", "-backend=false", "-input=false", "-no-color", cwd=root)
    verdict = json.loads(tf.run("validate", "-json", "-no-color", cwd=root).stdout)
    theirs = sorted((d["severity"], d["summary"], d["detail"]) for d in verdict["diagnostics"])
    assert theirs, "the case must make Terraform say something"
    assert ours == theirs
