"""``Scans``: one module's templates scanned once for the cycle check and the validate walk."""

from __future__ import annotations

import pytest

from flatten.syntax import references
from flatten.syntax.references import ExpressionError, Scans, template_calls, template_references

TEMPLATES = [
    "${var.a}",
    "plain text, no references",
    "${[for x in local.xs : x if x != var.skip]}",
    "%{ for k in keys(module.m) }${k}%{ endfor }",
    "${lenght(var.a)} ${provider::aws::arn(data.x.y.id)}",
    "$${var.escaped} ${local.b}",
]


@pytest.mark.parametrize("text", TEMPLATES)
def test_a_scan_answers_as_a_fresh_one_does(text: str) -> None:
    scans = Scans()
    for _ in range(2):  # the first asks the scanner, the second is answered from the first
        refs, calls = scans.calls(text)
        fresh_refs, fresh_calls = template_calls(text)
        assert [(r.root, r.steps, r.start, r.end) for r in refs] == [
            (r.root, r.steps, r.start, r.end) for r in fresh_refs
        ]
        assert [(c.name, c.start) for c in calls] == [(c.name, c.start) for c in fresh_calls]
        assert [r.root for r in scans.references(text)] == [r.root for r in template_references(text)]


def test_bound_names_are_part_of_what_is_asked() -> None:
    scans = Scans()
    assert [r.root for r in scans.references("${it.value} ${var.a}")] == ["it", "var"]
    assert [r.root for r in scans.references("${it.value} ${var.a}", frozenset({"it"}))] == ["var"]


def test_each_template_is_scanned_once_and_literal_text_never(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    real = references.template_calls

    def counting(text: str, *, bound: frozenset[str] = frozenset()) -> object:
        asked.append(text)
        return real(text, bound=bound)

    monkeypatch.setattr(references, "template_calls", counting)
    scans = Scans()
    for text in [*TEMPLATES, *TEMPLATES]:
        scans.calls(text)
    assert asked == [t for t in TEMPLATES if "${" in t or "%{" in t]


def test_an_unreadable_template_is_an_error_every_time() -> None:
    scans = Scans()
    for _ in range(2):
        with pytest.raises(ExpressionError):
            scans.calls("${var.a")


def test_a_limit_keeps_the_newest_scans_only(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    real = references.template_calls

    def counting(text: str, *, bound: frozenset[str] = frozenset()) -> object:
        asked.append(text)
        return real(text, bound=bound)

    monkeypatch.setattr(references, "template_calls", counting)
    scans = Scans(limit=2)
    for text in ["${var.a}", "${var.b}", "${var.c}", "${var.c}", "${var.b}", "${var.a}"]:
        scans.calls(text)
    # var.a was dropped when var.c came (the oldest first); var.b and var.c were still kept.
    assert asked == ["${var.a}", "${var.b}", "${var.c}", "${var.a}"]
