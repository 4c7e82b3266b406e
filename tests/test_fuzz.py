"""Short fuzzing run: mutated and random configurations never make flatten raise.

The long run (at least 100,000 inputs) is scripts/fuzz; docs/reliability.md records its counts.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fuzzing import check_text, check_tree, inputs

from flatten.options import Dialect

SHORT = int(os.environ.get("FLATTEN_FUZZ_COUNT", "600"))


@pytest.mark.parametrize("dialect", [Dialect.TERRAFORM, Dialect.OPENTOFU])
def test_mutated_inputs_only_diagnose(dialect: Dialect) -> None:
    for name, text in inputs(seed=1234 if dialect is Dialect.TERRAFORM else 99, count=SHORT):
        check_text(name, text, dialect)


@pytest.mark.parametrize(
    "content",
    [
        b"\xff\xfe\x00garbage",
        b'\xef\xbb\xbfvariable "x" {}\n',
        b"locals {\r\n  a = <<EOT\r\nline\r\nEOT\r\n}\r\n",
        b"\x00" * 100,
        b'locals { a = "' + b"\xc3\x28" + b'" }',
        b"resource" * 10_000,
        b"locals {\n  v = " + b"(" * 5000 + b"1" + b")" * 5000 + b"\n}\n",
        b"a = 1\n" * 20_000,
    ],
    ids=["binary", "bom", "crlf-heredoc", "nul", "invalid-utf8", "huge-token-run", "deep-parens", "big"],
)
def test_hostile_files_give_located_diagnostics(tree, content: bytes) -> None:
    root = tree({"main.tf": content})
    check_tree(root, Dialect.TERRAFORM)


def test_symlink_loop_and_unreadable_file(tree, tmp_path: Path) -> None:
    root = tree({"main.tf": 'module "a" {\n  source = "./loop"\n}\n', "secret.tf": "locals {}\n"})
    os.symlink("loop", root / "loop")  # a symlink to itself
    (root / "secret.tf").chmod(0)
    try:
        diags = check_tree(root, Dialect.TERRAFORM)
        summaries = {d.summary for d in diags}
        if os.geteuid() != 0:  # root can read anything
            assert "Failed to read file" in summaries
        assert "Unreadable module directory" in summaries or diags.has_errors
    finally:
        (root / "secret.tf").chmod(0o644)
