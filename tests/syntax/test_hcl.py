"""Native syntax → Terraform JSON: a data-file corpus, API checks and hypothesis properties.

Each ``tests/data/hcl/*.txt`` file is one case, so a new case needs no Python:

    # mode: expr              (optional: the text is one expression, converted in EXPR mode)
    # dialect: opentofu       (optional)
    <HCL>
    # --- expected
    <JSON: the expression's value, or the file as plain JSON; SKIP to check diagnostics only>
    # --- diagnostics         (optional; without it the case must give no diagnostics)
    error: <summary> @ <line>:<column>

Expected values are written by hand. The plain-JSON form of a body: attributes map to their
values; blocks group by type, labels become nested keys, and repeated blocks become a list.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.hcl_cases import CASES, plain, read_case

from flatten.lang.fields import Mode
from flatten.lang.options import Dialect, Options
from flatten.syntax import hcl_fast
from flatten.syntax._hcl_syntax_diags import with_hcl_errors
from flatten.syntax.hcl import convert_expression, parse_native


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case(path: Path) -> None:
    headers, source, expected, want_diags = read_case(path)
    options = Options(Dialect(headers.get("dialect", "terraform")))
    if headers.get("mode") == "expr":
        value, diags = convert_expression(source, Mode.EXPR, options=options)
    else:
        body, diags = parse_native(source, "main.tf", options=options)
        if diags.has_errors:
            # The corpus holds Terraform's errors: on the error path HCL's own parser gives them
            # (syntax/_hcl_syntax_diags.py), over what python-hcl2 read.
            body, diags = with_hcl_errors(
                source, "main.tf", (body, diags), options, lambda t, f, o: hcl_fast.read(t, f, options=o)
            )
        value = plain(body)
    got_diags = [
        f"{d.severity.value}: {d.summary} @ {d.range.start.line}:{d.range.start.column}"
        if d.range
        else d.summary
        for d in diags
    ]
    assert got_diags == want_diags
    # With syntax errors the body is the partial one HCL keeps (scripts/mutation-difftest checks
    # what the decoder makes of it).
    if expected != "SKIP" and not diags.has_errors:
        assert value == json.loads(expected, parse_float=Decimal)


def test_corpus_size() -> None:
    assert len(CASES) >= 150


# -- API details ---------------------------------------------------------------------------------


def test_ranges_and_bytes() -> None:
    src = '\ufeffresource "a" "é" {\n  n = "ü" # c\n}\n'
    body, diags = parse_native(src, "x.tf", options=Options())
    assert not diags
    block = body.blocks[0]
    assert (block.range.start.line, block.range.start.column, block.range.start.byte) == (1, 1, 3)
    assert block.range.end.column == 17 and block.range.end.byte == 20  # through the last label's quote
    assert [r.start.column for r in block.label_ranges] == [10, 14]
    attr = block.body.attributes[0]
    assert (attr.name_range.start.line, attr.name_range.start.column, attr.name_range.start.byte) == (
        2,
        3,
        25,
    )
    assert (attr.expr.range.start.column, attr.expr.range.end.column, attr.expr.range.end.byte) == (7, 10, 33)


def test_heredoc_range_excludes_newline() -> None:
    body, _ = parse_native("locals {\n  h = <<EOT\nx\nEOT\n}\n", "m.tf", options=Options())
    rng = body.blocks[0].body.attributes[0].expr.range
    assert (rng.start.line, rng.end.line, rng.end.column) == (2, 4, 4)


def test_convert_expression_positions() -> None:
    _, diags = convert_expression("[var.a,\n  upper(]")
    assert diags.has_errors and diags[0].range is not None and diags[0].range.start.line == 2


@pytest.mark.parametrize(
    ("mode", "hcl", "want"),
    [
        (Mode.LITERAL, '"foo-$${bar.baz}"', "foo-${bar.baz}"),
        (Mode.LITERAL, "1e3", 1000),
        (Mode.LITERAL, '{ "$${k}" = ["%%{x}"] }', {"${k}": ["%{x}"]}),
        (Mode.TRAVERSAL, "module.m.aws_instance.a[0]", "module.m.aws_instance.a[0]"),
        (Mode.TRAVERSAL_LIST, "[a.b, c]", ["a.b", "c"]),
        (Mode.KEYWORD, "destroy", "destroy"),
        (Mode.KEYWORD_LIST, "[a, b]", ["a", "b"]),
        (Mode.TYPE, "  object({ a = string })  ", "object({ a = string })"),
        (Mode.EXPR_SOURCE_LIST, '[a.b[0].c, d["k"]]', ["a.b[0].c", 'd["k"]']),
        (Mode.IGNORE_CHANGES, "all", "all"),
        (Mode.PROVIDER_MAP, "{ aws.dst = aws.west }", {"aws.dst": "aws.west"}),
        # HCL reads null/true/false as a traversal's root when a step follows (AsTraversal).
        (Mode.TRAVERSAL, "null.plain[each.key]", "null.plain[each.key]"),
        (Mode.REQUIRED_PROVIDER, '"~> 1.0"', "~> 1.0"),
    ],
)
def test_modes(mode: Mode, hcl: str, want: Any) -> None:
    value, diags = convert_expression(hcl, mode)
    assert not diags, diags
    assert value == want


@pytest.mark.parametrize(
    ("mode", "hcl", "summary"),
    [
        (Mode.KEYWORD, "upper(x)", 'Invalid "v" keyword'),
        (Mode.KEYWORD, '"destroy"', "Quoted keywords are deprecated"),
        (Mode.TRAVERSAL, "a.b[var.c + 1]", "Invalid expression"),
        (Mode.TRAVERSAL_LIST, "var.list", "Invalid expression"),
        (Mode.LITERAL, "1 + 2", "Literal value required"),
        (Mode.LITERAL, "[for x in y : x]", "Variables not allowed"),
        (Mode.TRAVERSAL, "null", "Invalid expression"),
    ],
)
def test_mode_diagnostics(mode: Mode, hcl: str, summary: str) -> None:
    _, diags = convert_expression(hcl, mode)
    assert [d.summary for d in diags] == [summary]


def test_ignore_changes_wildcard_mixed_with_references() -> None:
    _, diags = convert_expression('["*", foo]', Mode.IGNORE_CHANGES)
    assert [d.summary for d in diags] == ["Invalid ignore_changes wildcard", "Invalid ignore_changes ruleset"]
    # Both point at the wildcard item (columns are 1-based, the list opens at column 1).
    assert {(d.range.start.column if d.range else 0) for d in diags} == {2}
    _, alone = convert_expression('["*"]', Mode.IGNORE_CHANGES)
    assert [d.summary for d in alone] == ["Invalid ignore_changes wildcard"]


def test_duplicate_provider_address_in_a_providers_map() -> None:
    from flatten.syntax.hcl_fast import read_fast

    text = 'module "m" {\n  source = "./m"\n  providers = {\n    aws = aws.a\n    aws = aws.b\n  }\n}\n'
    _, diags = parse_native(text, "main.tf", options=Options())
    assert [d.summary for d in diags] == ["Duplicate provider address"]
    assert diags[0].range is not None and diags[0].range.start.line == 5
    # The fast reader declines the file, so python-hcl2's reading (with the error) is the one used.
    assert read_fast(text, "main.tf", options=Options()) is None


@pytest.mark.parametrize(
    "text",
    ["locals {", "}", 'a "b" {', "x = [1,", "locals { a = }", "\x00", "a" * 3 + "{"],
)
def test_syntax_errors_are_diagnostics(text: str) -> None:
    body, diags = parse_native(text, "bad.tf", options=Options())
    assert diags.has_errors and body.items == ()
    assert all(d.range is not None for d in diags)


def test_deep_nesting_never_raises() -> None:
    _, diags = convert_expression("[" * 3000 + "]" * 3000)
    assert isinstance(diags, list)


def test_missing_newline_after_argument() -> None:
    _, diags = parse_native("locals { a = 1 b = 2 }\n", "m.tf", options=Options())
    assert [d.summary for d in diags] == ["Missing newline after argument"]


# -- properties ----------------------------------------------------------------------------------

_text = st.lists(st.sampled_from([*list('ab $%{}"\\\n\t~é✓😀'), "${", "%{", "$${", "%%{"]), max_size=12).map(
    "".join
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.decimals(allow_nan=False, allow_infinity=False, places=6).filter(lambda d: d != d.to_integral_value()),
    _text,
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.from_regex(r"[a-z][a-z0-9_]{0,5}", fullmatch=True), inner, max_size=4),
    ),
    max_leaves=12,
)


def _hcl_string(s: str) -> str:
    out = []
    for i, ch in enumerate(s):
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch in "$%" and s[i + 1 : i + 2] == "{":
            out.append(ch + ch)
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _hcl(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | Decimal):
        return str(value)
    if isinstance(value, str):
        return _hcl_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_hcl(v) for v in value) + "]"
    return "{" + ", ".join(f"{k} = {_hcl(v)}" for k, v in value.items()) + "}"


def _as_template(value: Any) -> Any:
    """The EXPR-mode JSON form of a literal value: strings escaped as templates."""
    if isinstance(value, str):
        return value.replace("${", "$${").replace("%{", "%%{")
    if isinstance(value, list):
        return [_as_template(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_template(v) for k, v in value.items()}
    return value


@settings(max_examples=300, deadline=None)
@given(_values)
def test_literals_round_trip(value: Any) -> None:
    literal, diags = convert_expression(_hcl(value), Mode.LITERAL)
    assert not diags.has_errors, (value, diags)
    assert literal == value
    expr, diags = convert_expression(_hcl(value), Mode.EXPR)
    assert not diags.has_errors
    assert expr == _as_template(value)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([*list('ab1 .$%{}[]()"\\\n=#/*<-!~:?,'), "${", "<<EOT\n"]), max_size=30).map(
        "".join
    )
)
def test_never_raises(text: str) -> None:
    _value, diags = convert_expression(text)
    _body, diags2 = parse_native("locals {\n  v = " + text + "\n}\n", "f.tf", options=Options())
    assert isinstance(diags, list) and isinstance(diags2, list)
    assert all(d.summary != "Internal error in flatten's HCL reader" for d in [*diags, *diags2]), (
        text,
        diags2,
    )
