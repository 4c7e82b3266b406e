"""Rewriting one test file (flatten/stages/testfiles.py): what changes, and what never does."""

from __future__ import annotations

from pathlib import Path

import pytest

from flatten.lang.options import Options
from flatten.stages.testfiles import Target, rewrite_test_file
from flatten.syntax import hcl
from flatten.syntax.hcl_fast import parse_any_blocks

_NATIVE = """# a comment the rewrite keeps
variables {
  greeting = "héllo"
}

run "setup" {
  module {
    source  = "./old" // trailing comment
  }
}

mock_provider "aws" {
  alias  = "east"
  source = "./mocks/"
}

run "check" {
  command = plan
  assert {
    condition     = output.x == "${var.greeting}"
    error_message = <<-EOT
      not ${var.greeting}
    EOT
  }
}
"""


def test_both_readers_read_a_test_file_alike() -> None:
    fast, fast_diags = parse_any_blocks(_NATIVE, "t.tftest.hcl", options=Options())
    ref, ref_diags = hcl.parse_any_blocks(_NATIVE, "t.tftest.hcl", options=Options())
    assert not fast_diags and not ref_diags
    assert fast == ref


def test_only_the_named_directories_change(tmp_path: Path) -> None:
    (tmp_path / "old").mkdir()
    (tmp_path / "mocks").mkdir()
    places = {tmp_path / "old": Target("modules/new"), tmp_path / "mocks": Target("mocks")}
    result = rewrite_test_file(
        _NATIVE.encode(),
        "t.tftest.hcl",
        module_dir=tmp_path,
        here="",
        locate=lambda real: places.get(real),
        inlined=frozenset(),
        options=Options(),
    )
    assert result.problem is None and result.data is not None
    assert result.data.decode() == _NATIVE.replace('"./old"', '"./modules/new"')


def test_a_bom_keeps_its_place(tmp_path: Path) -> None:
    (tmp_path / "old").mkdir()
    data = b"\xef\xbb\xbf" + b'run "a" {\n  module {\n    source = "./old"\n  }\n}\n'
    result = rewrite_test_file(
        data,
        "t.tftest.hcl",
        module_dir=tmp_path,
        here="live",
        locate=lambda real: Target("shared/old"),
        inlined=frozenset(),
        options=Options(),
    )
    assert result.data == data.replace(b'"./old"', b'"../shared/old"')


@pytest.mark.parametrize(
    ("name", "data", "why"),
    [
        ("t.tftest.hcl", b"\xff\xfe", "not valid UTF-8"),
        ("t.tftest.json", b"{", "not valid JSON"),
        ("t.tftest.json", b"[]", "not a JSON object"),
        ("t.tftest.hcl", b'run "a" {\n', "cannot be read"),
        ("t.tftest.hcl", b'run "a" {\n  module {\n    source = "./missing"\n  }\n}\n', '"./missing"'),
    ],
)
def test_a_file_that_cannot_come_along_says_why(tmp_path: Path, name: str, data: bytes, why: str) -> None:
    result = rewrite_test_file(
        data,
        name,
        module_dir=tmp_path,
        here="",
        locate=lambda real: Target("x"),
        inlined=frozenset(),
        options=Options(),
    )
    assert result.data is None and result.problem is not None and why in result.problem
