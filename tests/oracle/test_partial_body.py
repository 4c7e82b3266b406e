"""After a syntax error Terraform's decoder reads the partial body HCL keeps (issue 40): a heredoc
left open keeps the template read so far, a block whose header is broken keeps its labels and an
empty body, a broken variable type is no further error. flatten reports the same set of errors
as `terraform validate -json` (Terraform 1.11, terraform_data only, offline) on each.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_flatten
from support.files import write_tree
from support.oracle import terraform, validate_json

ROOTS = {
    # The alias is the heredoc's text so far: not a valid name.
    "open heredoc as an alias": {
        "main.tf": 'provider "terraform" {\n  alias = <<EOT\nsecond\nEO\n}\n',
    },
    # The constraint is the heredoc's text so far: not a valid constraint.
    "open heredoc as required_version": {
        "main.tf": "terraform {\n  required_version = <<EOT\n>= 1.0\nEO\n}\n",
    },
    # A quote inserted in a label: the rest of the file is label text; the block keeps its
    # labels ("Extraneous label for resource" at the third).
    "quote in a label": {
        "main.tf": 'resource terraform_data" "a" {\n  input = 1\n}\n',
    },
    # A nested block header ended by a newline: kept with an empty body.
    "broken nested header": {
        "main.tf": (
            'resource "terraform_data" "a" {\n  lifecycle "x"\n  {\n  }\n}\n'
            'module "m" {\n  source  "./m"\n}\n'
        ),
        "m/main.tf": "",
    },
    # A missing separator in an object type: no "Invalid type specification".
    "broken variable type": {
        "main.tf": 'variable "v" {\n  type = object({\n    a = string\n    b = number c = bool\n  })\n}\n',
    },
    # Not a syntax error at all: go-version's syntax, read as the file is loaded.
    "required_version with a stray bracket": {
        "main.tf": 'terraform {\n  required_version = ">= 1.0]"\n}\n',
    },
    # A JSON string is a template Terraform parses when it evaluates it.
    "json string with an open interpolation": {
        "main.tf.json": '{"locals": {"x": 1}, "output": {"a": {"value": "${local.x"}}}\n',
    },
    # A module called twice: HCL's parser caches each file, so its syntax error comes once; the
    # decoder's errors come once per call.
    "module called twice": {
        "main.tf": 'module "a" {\n  source = "./m"\n}\nmodule "b" {\n  source = "./m"\n}\n',
        "m/main.tf": 'resource "terraform_data" {\n  input = \n}\n',
    },
    # Before 1.12 an import block's "id" is a required argument (HCL's error).
    "import without id": {
        "main.tf": 'resource "terraform_data" "a" {}\nimport {\n  to = terraform_data.a\n  id  "x"\n}\n',
    },
}


def _summaries(doc: dict[str, object]) -> list[tuple[str, str]]:
    return sorted((d["severity"], d["summary"]) for d in doc["diagnostics"])  # type: ignore[attr-defined, index]


@pytest.mark.parametrize("name", sorted(ROOTS))
def test_the_errors_after_a_syntax_error_are_terraforms(name: str, tmp_path: Path) -> None:
    tf = terraform()
    root = write_tree(tmp_path / "root", ROOTS[name])
    theirs = validate_json(tf, root)
    assert theirs["error_count"] >= 1
    ours = run_flatten(
        "build",
        root,
        "--out",
        tmp_path / "out",
        "--diagnostics-json",
        "--terraform-version",
        "1.11",
        cache=tmp_path / "cache",
    )
    assert ours.returncode == 1, ours.stderr
    assert _summaries(json.loads(ours.stdout)) == _summaries(theirs)
