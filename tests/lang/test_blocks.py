"""One row per top-level block type (flatten/lang/blocks.py): readers, decode, merge and emit follow it."""

from __future__ import annotations

import pytest

from flatten.lang.blocks import BLOCKS, Emit, by_name, emit_form, top_schema
from flatten.lang.dialect import Dialect
from flatten.lang.model import Attribute, Block, Body, Expr, Module, ParsedFile, Range
from flatten.lang.options import Options
from flatten.stages import decode, merge
from flatten.stages.emit import module_json
from flatten.syntax.hcl import parse_native


@pytest.mark.parametrize("dialect", list(Dialect))
def test_the_readers_accept_exactly_the_rows_the_dialect_allows(dialect: Dialect) -> None:
    schema = top_schema(dialect)
    assert list(schema.blocks) == [b.name for b in BLOCKS if b.allowed(dialect)]
    for row in BLOCKS:
        if row.allowed(dialect):
            assert schema.blocks[row.name].labels == row.labels


def test_the_dialects_differ_only_in_rows_gated_by_a_feature() -> None:
    tf, tofu = (set(top_schema(d).blocks) for d in Dialect)
    assert tf ^ tofu == {b.name for b in BLOCKS if b.feature is not None}


@pytest.mark.parametrize(
    ("dialect", "text"),
    [
        (Dialect.TERRAFORM, "language {\n  edition = tofu2024\n}\n"),
        (Dialect.OPENTOFU, 'action "aws_lambda_invoke" "x" {\n}\n'),
    ],
)
def test_a_block_type_of_the_other_engine_is_unsupported(dialect: Dialect, text: str) -> None:
    body, diags = parse_native(text, "main.tf", options=Options(dialect=dialect))
    assert [d.summary for d in diags.errors] == ["Unsupported block type"]
    assert body.blocks == ()


def test_every_handler_a_row_names_is_the_one_dispatched() -> None:
    # The stages build their dispatch from the rows; a row's names are exactly what runs.
    for row in BLOCKS:
        check = decode._CHECKS.get(row.name)
        append = merge._APPEND.get(row.name)
        override = merge._MERGE.get(row.name)
        assert (check.__name__ if check else None) == (f"block_{row.check}" if row.check else None)
        assert (append.__name__ if append else None) == (f"_append_{row.append}" if row.append else None)
        assert (override.__name__ if override else None) == (f"_merge_{row.merge}" if row.merge else None)
    assert set(decode._CHECKS) | set(merge._APPEND) | set(merge._MERGE) <= {b.name for b in BLOCKS}


def test_decode_runs_the_check_a_row_names() -> None:
    parsed, _ = parse_native('variable "1bad" {\n}\n', "main.tf", options=Options())
    diags = decode.check_file(ParsedFile("main.tf", "native", parsed), options=Options())
    assert by_name("variable") is not None and by_name("variable").check == "variable"  # type: ignore[union-attr]
    assert [d.summary for d in diags] == ["Invalid variable name"]


def _block(type_: str, *labels: str, **values: object) -> Block:
    r = Range.point("main.tf")
    attrs = tuple(Attribute(k, Expr(v, r), r) for k, v in values.items())  # type: ignore[arg-type]
    return Block(type_, labels, Body(attrs), r)


def test_emit_writes_each_type_in_its_rows_form() -> None:
    module = Module(
        ".",
        (
            _block("moved", **{"from": "a.b", "to": "a.c"}),
            _block("locals", x=1),
            _block("locals", y=2),
            _block("terraform", required_version="1.0"),
        ),
        ("main.tf",),
    )
    doc = module_json(module)
    assert emit_form("moved") is Emit.LIST and doc["moved"] == [{"from": "a.b", "to": "a.c"}]
    assert emit_form("locals") is Emit.MERGED and doc["locals"] == {"x": 1, "y": 2}
    assert emit_form("terraform") is Emit.DEFAULT and doc["terraform"] == {"required_version": "1.0"}
