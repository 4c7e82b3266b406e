"""A misspelt block type gets HCL's suggestion (issue 40): "Blocks of type "resouce" are not
expected here. Did you mean "resource"?" (hclsyntax/structure.go, ``nameSuggestion``), with the
detail `terraform validate -json` gives (Terraform 1.11, offline).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.files import write_tree
from support.oracle import terraform

ROOTS = {
    "resource": 'resouce "terraform_data" "a" {}\n',
    "variable": 'variabel "x" {}\n',
    "locals": "local {\n  a = 1\n}\n",
    "no near name": 'nothing_like_it "x" {}\n',
}


def _details(doc: dict[str, object]) -> list[tuple[str, str]]:
    return sorted((d["summary"], d["detail"]) for d in doc["diagnostics"])  # type: ignore[attr-defined, index]


@pytest.mark.parametrize("name", sorted(ROOTS))
def test_block_type_suggestions_are_hcls(name: str, tmp_path: Path) -> None:
    tf = terraform()
    root = write_tree(tmp_path / "root", {"main.tf": ROOTS[name]})
    theirs = json.loads(tf.run("validate", "-json", cwd=root).stdout)
    ours = subprocess.run(
        [
            sys.executable,
            "-m",
            "flatten",
            "build",
            str(root),
            "--out",
            str(tmp_path / "out"),
            "--diagnostics-json",
        ],
        capture_output=True,
        text=True,
    )
    assert ours.returncode == 1, ours.stderr
    assert _details(json.loads(ours.stdout)) == _details(theirs)
