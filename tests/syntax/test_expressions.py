"""The expression rewriter (``flatten.syntax.references``): tables of templates and expressions.

Each row renames ``var.x`` to ``local.y`` and ``aws_vpc.this`` to ``aws_vpc.net__this`` and
states the exact output: references are found by parsing, so string literals, comments, object
keys, function names and names bound by ``for`` expressions and directives are left alone.
"""

from __future__ import annotations

import pytest

from flatten.syntax.references import (
    ExpressionError,
    Reference,
    expression_references,
    json_to_hcl,
    literal_to_expression,
    rewrite_expression,
    rewrite_template,
    simplify_template,
    single_interpolation,
    template_references,
)


def _rename(ref: Reference, text: str) -> str | None:
    if ref.root == "var" and ref.name(1) == "x":
        return "local.y" + ref.tail(text, 1)
    if ref.root == "aws_vpc" and ref.name(1) == "this":
        return "aws_vpc.net__this" + ref.tail(text, 1)
    if ref.root == "path" and ref.name(1) == "module":
        return '"modules/net"' + ref.tail(text, 1)
    return None


TEMPLATES = [
    ("plain", "${var.x}", "${local.y}"),
    ("attribute kept", "${var.x.a[0]}", "${local.y.a[0]}"),
    ("literal text untouched", "var.x is ${var.x}", "var.x is ${local.y}"),
    ("escaped interpolation untouched", "$${var.x} ${var.x}", "$${var.x} ${local.y}"),
    ("escaped directive untouched", "%%{if var.x} ${var.x}", "%%{if var.x} ${local.y}"),
    ("string literal untouched", '${upper("var.x")}', '${upper("var.x")}'),
    ("nested template rewritten", '${upper("v=${var.x}")}', '${upper("v=${local.y}")}'),
    ("escaped quote in string", '${"a\\"var.x"} ${var.x}', '${"a\\"var.x"} ${local.y}'),
    ("other root untouched", "${local.x} ${var.xx}", "${local.x} ${var.xx}"),
    ("function name untouched", "${var(1)} ${var.x}", "${var(1)} ${local.y}"),
    ("provider function", "${provider::aws::arn(var.x)}", "${provider::aws::arn(local.y)}"),
    ("for shadows body", "${[for var in var.x : var.x]}", "${[for var in local.y : var.x]}"),
    (
        "for shadows key and value",
        "${{for k, var in var.x : k => var}}",
        "${{for k, var in local.y : k => var}}",
    ),
    ("for shadow ends", "${[for var in [] : var.x]} ${var.x}", "${[for var in [] : var.x]} ${local.y}"),
    (
        "for with conditional collection",
        "${[for v in var.x ? [1] : [2] : v]}",
        "${[for v in local.y ? [1] : [2] : v]}",
    ),
    ("for with if", "${[for v in var.x : v if v != var.x]}", "${[for v in local.y : v if v != local.y]}"),
    (
        "template for shadows",
        "%{for var in var.x}${var.x}%{endfor}${var.x}",
        "%{for var in local.y}${var.x}%{endfor}${local.y}",
    ),
    ("template if", "%{if var.x}yes%{else}${var.x}%{endif}", "%{if local.y}yes%{else}${local.y}%{endif}"),
    (
        "trim markers",
        "%{~ if var.x ~}${~ var.x ~}%{~ endif ~}",
        "%{~ if local.y ~}${~ local.y ~}%{~ endif ~}",
    ),
    (
        "splat",
        "${aws_vpc.this[*].id} ${aws_vpc.this.*.id}",
        "${aws_vpc.net__this[*].id} ${aws_vpc.net__this.*.id}",
    ),
    ("computed index", "${aws_vpc.this[var.x].id}", "${aws_vpc.net__this[local.y].id}"),
    ("legacy index", "${aws_vpc.this.0.id}", "${aws_vpc.net__this.0.id}"),
    ("object key literal", "${ {var = 1, x = var.x} }", "${ {var = 1, x = local.y} }"),
    ("object key traversal", "${ {var.x = 1} }", "${ {local.y = 1} }"),
    ("object key parenthesized", "${ {(var.x): 1} }", "${ {(local.y): 1} }"),
    ("conditional", "${var.x ? var.x : null}", "${local.y ? local.y : null}"),
    ("comment untouched", "${var.x # var.x\n}", "${local.y # var.x\n}"),
    ("block comment untouched", "${/* var.x */ var.x}", "${/* var.x */ local.y}"),
    ("heredoc", "${<<EOT\nv=${var.x} var.x\nEOT\n}", "${<<EOT\nv=${local.y} var.x\nEOT\n}"),
    ("indented heredoc", "${<<-EOT\n  ${var.x}\n  EOT\n}", "${<<-EOT\n  ${local.y}\n  EOT\n}"),
    ("numbers", "${1.5e3 + var.x}", "${1.5e3 + local.y}"),
    ("path.module", '${file("${path.module}/a")}', '${file("${"modules/net"}/a")}'),
    (
        "self and each untouched",
        "${self.id} ${each.key} ${count.index}",
        "${self.id} ${each.key} ${count.index}",
    ),
]


@pytest.mark.parametrize(
    ("text", "expected"), [(t, e) for _, t, e in TEMPLATES], ids=[i for i, _, _ in TEMPLATES]
)
def test_rewrite_template(text: str, expected: str) -> None:
    assert rewrite_template(text, lambda r: _rename(r, text)) == expected


def test_bound_names_are_not_references() -> None:
    text = "${ingress.value} ${var.x}"
    assert [r.root for r in template_references(text, bound={"ingress"})] == ["var"]


EXPRESSIONS = [
    ("traversal", "aws_vpc.this", "aws_vpc.net__this"),
    ("indexed traversal", 'aws_vpc.this["a"]', 'aws_vpc.net__this["a"]'),
    ("not a template", "var.x", "local.y"),
    ("quoted untouched", '"var.x"', '"var.x"'),
]


@pytest.mark.parametrize(
    ("text", "expected"), [(t, e) for _, t, e in EXPRESSIONS], ids=[i for i, _, _ in EXPRESSIONS]
)
def test_rewrite_expression(text: str, expected: str) -> None:
    assert rewrite_expression(text, lambda r: _rename(r, text)) == expected


def test_reference_steps() -> None:
    text = 'module.n["out"][0].z'
    (ref,) = expression_references(text)
    assert ref.root == "module"
    assert ref.steps == (("attr", "n"), ("index", "out"), ("index", 0), ("attr", "z"))
    assert ref.name(2) == "out" and ref.name(3) is None
    assert ref.tail(text, 2) == "[0].z"


UNREADABLE = [
    ("unterminated interpolation", "${var.x"),
    ("unterminated string", '${"abc}'),
    ("unbalanced", "${var.x)}"),
    ("endfor without for", "%{endfor}"),
    ("unclosed for", "%{for x in y}z"),
    ("unterminated heredoc", "${<<EOT\nabc\n}"),
    ("unknown directive", "%{bogus}"),
]


@pytest.mark.parametrize("text", [t for _, t in UNREADABLE], ids=[i for i, _ in UNREADABLE])
def test_unreadable(text: str) -> None:
    with pytest.raises(ExpressionError):
        template_references(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('${"modules/net"}/x', "modules/net/x"),
        ('$${"kept"}', '$${"kept"}'),
        ('${file("${"m"}/a")}', '${file("m/a")}'),
        ('${"a\\"b"}', '${"a\\"b"}'),
    ],
)
def test_simplify_template(text: str, expected: str) -> None:
    assert simplify_template(text) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "null"),
        (True, "true"),
        (3, "3"),
        ("${var.x}", "(var.x)"),
        ("a${var.x}", '"a${var.x}"'),
        ('say "hi"\n', '"say \\"hi\\"\\n"'),
        ({"k": ["${a}", 1]}, '{"k" = [(a), 1]}'),
    ],
)
def test_json_to_hcl(value: object, expected: str) -> None:
    assert json_to_hcl(value) == expected  # type: ignore[arg-type]


def test_literal_to_expression_escapes() -> None:
    assert literal_to_expression({"${k}": ["%{x}", 1, None]}) == {"$${k}": ["%%{x}", 1, None]}


def test_single_interpolation() -> None:
    assert single_interpolation("${a.b}") == "a.b"
    assert single_interpolation("${a}${b}") is None
    assert single_interpolation("${~a~}") is None
