"""A misspelt block type, or a misspelt argument of the builtin provider's terraform_data, gets
HCL's suggestion (issue 40): "Blocks of type "resouce" are not expected here. Did you mean
"resource"?" (hclsyntax/structure.go, ``nameSuggestion``), with the detail `terraform validate
-json` gives (Terraform 1.11, offline).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_flatten
from support.files import write_tree
from support.oracle import terraform, validate_json

ROOTS = {
    "resource": 'resouce "terraform_data" "a" {}\n',
    "variable": 'variabel "x" {}\n',
    "locals": "local {\n  a = 1\n}\n",
    "no near name": 'nothing_like_it "x" {}\n',
    # The builtin terraform provider's schema (stages/builtin_schema.py).
    "terraform_data argument": 'resource "terraform_data" "a" {\n  inpu = 1\n}\n',
    "terraform_data block": 'resource "terraform_data" "a" {\n  input = 1\n  triggers {\n  }\n}\n',
    "terraform_data in json": '{"resource": {"terraform_data": {"a": {"triggers_replce": [1]}}}}\n',
}


def _details(doc: dict[str, object]) -> list[tuple[str, str]]:
    return sorted((d["summary"], d["detail"]) for d in doc["diagnostics"])  # type: ignore[attr-defined, index]


@pytest.mark.parametrize("name", sorted(ROOTS))
def test_block_type_suggestions_are_hcls(name: str, tmp_path: Path) -> None:
    tf = terraform()
    filename = "main.tf.json" if ROOTS[name].startswith("{") else "main.tf"
    root = write_tree(tmp_path / "root", {filename: ROOTS[name]})
    theirs = validate_json(tf, root)
    ours = run_flatten(
        "build", root, "--out", tmp_path / "out", "--diagnostics-json", cache=tmp_path / "cache"
    )
    assert ours.returncode == 1, ours.stderr
    assert _details(json.loads(ours.stdout)) == _details(theirs)


def test_a_module_call_suggestion_is_the_first_sorted_name_as_terraform_gives(tmp_path: Path) -> None:
    """Terraform sorts the call names and suggests the first within distance 2 ("aab"): not the
    nearest ("abc") nor the first declared (``staticValidateModuleCallReference``)."""
    tf = terraform()
    main = (
        'module "abc" { source = "./c" }\nmodule "aab" { source = "./c" }\n'
        'output "x" { value = module.abd }\n'
    )
    root = write_tree(tmp_path / "root", {"main.tf": main, "c/main.tf": ""})
    theirs = validate_json(tf, root)
    ours = run_flatten(
        "build", root, "--out", tmp_path / "out", "--diagnostics-json", cache=tmp_path / "cache"
    )
    assert ours.returncode == 1, ours.stderr
    assert _details(json.loads(ours.stdout)) == _details(theirs)
    assert 'Did you mean "aab"?' in _details(theirs)[0][1]
