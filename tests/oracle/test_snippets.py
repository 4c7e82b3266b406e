"""`--diagnostics-json` carries the `snippet` object `terraform validate -json` gives (issue 40):
the block header as context, the source line, its number and the highlighted span, compared with
Terraform's own on the same roots (terraform_data only, offline).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_flatten
from support.files import write_tree
from support.oracle import terraform, validate_json

ROOTS = {
    "undeclared variable": {"main.tf": 'resource "terraform_data" "a" {\n  input = var.nope\n}\n'},
    "unclosed block": {
        "main.tf": 'resource "terraform_data" "a" {\n  input = "x"\n\nresource "terraform_data" "b" {}\n'
    },
    "second file": {
        "main.tf": 'resource "terraform_data" "a" {}\n',
        "locals.tf": "locals {\n  a = 1\n  b = local.missing\n}\n",
    },
    "json syntax in an array": {
        "main.tf.json": '{"resource": [{"terraform_data": {"a": {"input": "${var.nope}"}}}]}\n'
    },
    # The subject starts a line after a one-line block: HCL's block range ends at its brace, so
    # the byte before the subject (a newline) is in no block and there is no context.
    "after a one-line block": {"main.tf": 'output "a" { value = 1 }\noutput "a" { value = 2 }\n'},
    "json syntax": {"main.tf.json": '{"resource": {"terraform_data": {"a": {"input": "${var.nope}"}}}}\n'},
}


def _snippets(doc: dict[str, object]) -> list[tuple[object, ...]]:
    found = []
    for d in doc["diagnostics"]:  # type: ignore[attr-defined]
        rng = d.get("range") or {}
        found.append((d["severity"], d["summary"], rng.get("filename"), d.get("snippet")))
    return sorted(found, key=repr)


@pytest.mark.parametrize("name", sorted(ROOTS))
def test_the_snippet_is_terraforms(name: str, tmp_path: Path) -> None:
    tf = terraform()
    root = write_tree(tmp_path / "root", ROOTS[name])
    theirs = validate_json(tf, root)
    assert theirs["error_count"] >= 1 and all(d.get("snippet") for d in theirs["diagnostics"])
    ours = run_flatten(
        "build", root, "--out", tmp_path / "out", "--diagnostics-json", cache=tmp_path / "cache"
    )
    assert ours.returncode == 1, ours.stderr
    assert _snippets(json.loads(ours.stdout)) == _snippets(theirs)
