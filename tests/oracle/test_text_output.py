"""flatten's text output lists diagnostics in the order `terraform validate` prints them and with
its location line (issue 40): Terraform sorts before printing (warnings first, files with fewer
path segments first, then by name and position; internal/tfdiags/diagnostics.go) while
`validate -json` keeps the order found, and names the block around the subject
(`on main.tf line 2, in resource "terraform_data" "a":`). Compared with Terraform 1.11's own
text on the same roots (terraform_data only, offline).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.files import write_tree
from support.oracle import terraform

ROOTS = {
    # Found in this order: the trailing comma, then the decoder's error about the partial value;
    # printed the other way round (same file, the decoder's subject starts first).
    "json trailing comma": {"main.tf.json": '{"locals": {"a": "v", }}\n'},
    # A module directory named "a": "a/main.tf" sorts before "z.tf" by name, after it by segments.
    "module before root by name": {
        "z.tf": (
            'module "m" {\n  source = "./a"\n}\nresource "terraform_data" "z" {\n  input = local.nope\n}\n'
        ),
        "b.tf": "locals {\n  x = var.missing\n}\n",
        "a/main.tf": 'output "o" {\n  value = var.w\n}\n',
    },
    "several files and blocks": {
        "main.tf": (
            'resource "terraform_data" "a" {\n  input = local.one\n}\n'
            'resource "terraform_data" "b" {\n  input = local.two\n}\n'
        ),
        "a.tf": 'output "x" {\n  value = var.three\n}\n',
    },
}

# "Error: summary" and the location line after it; nothing else of either output is compared.
_ITEM = re.compile(r"^(Error|Warning): (.+)\n\n  (on .+:)$", re.MULTILINE)


def _items(text: str) -> list[tuple[str, str, str]]:
    return [(m[1], m[2], m[3]) for m in _ITEM.finditer(text)]


@pytest.mark.parametrize("name", sorted(ROOTS))
def test_the_order_and_location_lines_are_terraforms(name: str, tmp_path: Path) -> None:
    tf = terraform()
    root = write_tree(tmp_path / "root", ROOTS[name])
    tf.run("init", "-backend=false", "-input=false", "-no-color", cwd=root)
    theirs = tf.run("validate", "-no-color", cwd=root)
    assert theirs.returncode == 1, theirs.stdout
    ours = subprocess.run(
        [sys.executable, "-m", "flatten", "build", str(root), "--out", str(tmp_path / "out"), "--no-color"],
        capture_output=True,
        text=True,
    )
    assert ours.returncode == 1, ours.stderr
    expected = _items(theirs.stdout + theirs.stderr)
    assert len(expected) >= 2
    assert _items(ours.stderr) == expected
