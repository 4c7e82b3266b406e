"""A native file's diagnostics on the error path: HCL's syntax errors in place of the readers'.

The readers (the fast reader, python-hcl2) decide whether a file is well-formed and build its
model; their own wording of a syntax error is python-hcl2's view of it. When a file has errors,
``with_hcl_errors`` asks ``_hcl_errors`` (hclsyntax's scanner and parser) for every error
Terraform reports, with HCL's summaries, details and ranges, and keeps of the readers'
diagnostics only those that are not syntax errors and come before HCL's first error (what the
decoder reports about the well-formed part). When HCL finds no syntax error where python-hcl2
failed (a construct python-hcl2 cannot read), the readers' diagnostics stand.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections.abc import Callable

from flatten.lang.diagnostics import Code, Diagnostic, Diagnostics, Extra, Severity
from flatten.lang.model import Attribute, Block, Body, Pos, Range
from flatten.lang.options import Options
from flatten.syntax._hcl_errors import Placeholder, SyntaxDiag, config_errors, read_config

__all__ = ["positions", "with_hcl_errors"]

_SYNTAX = Extra(Code.SYNTAX)
_DECODER = Extra(Code.INVALID_EXPRESSION)  # a decoder's error on HCL's partial expression


def _reader_syntax(d: Diagnostic) -> bool:
    """Whether ``d`` is a reader's own view of a syntax error (``Extra.reader_syntax``, set where
    syntax/hcl.py makes it), which HCL's errors replace."""
    return d.extra is not None and d.extra.reader_syntax


def positions(text: str, filename: str) -> _Positions:
    return _Positions(text, filename)


class _Positions:
    """Character offsets to HCL positions: 1-based line and column, byte offset in UTF-8 (a
    byte order mark counts in bytes, not in columns, as hclsyntax's ``scanTokens``)."""

    def __init__(self, text: str, filename: str) -> None:
        self.text = text
        self.filename = filename
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.ascii = text.isascii()

    def pos(self, i: int) -> Pos:
        i = max(0, min(i, len(self.text)))
        line = bisect.bisect_right(self.starts, i) - 1
        column = i - self.starts[line] + 1
        byte = i if self.ascii else len(self.text[:i].encode("utf-8", "surrogatepass"))
        return Pos(line + 1, column, byte)

    def range(self, start: int, end: int) -> Range:
        return Range(self.filename, self.pos(start), self.pos(max(start, end)))


def as_diagnostics(found: list[SyntaxDiag], where: _Positions) -> list[Diagnostic]:
    return [
        Diagnostic(
            Severity.ERROR,
            d.summary,
            d.detail,
            where.range(d.start, d.end),
            extra=_SYNTAX,
            context=where.range(*d.context) if d.context is not None else None,
        )
        for d in found
    ]


def _as_written(d: Diagnostic, where: _Positions, kept: _Positions) -> bool:
    """Whether ``d``, a reader's "A static ... expression is required" on the partial body, is
    about a value the partial body kept as it was written: then it is the decoder's error on
    HCL's partial expression (a quoted ``depends_on`` before a stray bracket, Terraform's
    "Invalid expression"), not one on a value the partial body had to rewrite (``null``)."""
    rng = d.range
    if not _reader_syntax(d) or d.code is not Code.INVALID_EXPRESSION or rng is None:
        return False
    if rng.filename != where.filename or rng.start.line != rng.end.line:
        return False
    line = rng.start.line - 1
    if line >= len(where.starts) or line >= len(kept.starts):
        return False
    a = where.starts[line] + rng.start.column - 1
    b = kept.starts[line] + rng.start.column - 1
    n = rng.end.column - rng.start.column
    return n > 0 and where.text[a : a + n] == kept.text[b : b + n]


def _moved(placeholders: list[Placeholder], where: _Positions) -> dict[tuple[int, int], Range]:
    """Where each placeholder brace stands in the partial body (line, column), and the range of
    its block type (the partial body keeps every line, and the brace is on its edit's first)."""
    out = {}
    for p in placeholders:
        at = where.pos(p.at)
        out[(at.line, at.column + p.into)] = where.range(*p.block_type)
    return out


def _at_block_types(
    diags: Diagnostics, moved: dict[tuple[int, int], Range], filename: str
) -> list[Diagnostic]:
    """The partial body's diagnostics with those at a placeholder brace at the block type, where
    Terraform reports them (``Placeholder``: "Missing name for resource")."""
    out = []
    for d in diags:
        rng = d.range
        if rng is not None and rng.filename == filename:
            to = moved.get((rng.start.line, rng.start.column))
            if to is not None:
                d = dataclasses.replace(d, range=to, context=None)
        out.append(d)
    return out


def _bodies_at_block_types(body: Body, moved: dict[tuple[int, int], Range]) -> Body:
    """``body`` with the body of each block HCL kept without one at its block type: its range is
    the block type's (``Body{SrcRange: ident.Range}``), where the decoder reports what the body
    lacks ("Missing required argument")."""
    items: list[Attribute | Block] = []
    changed = False
    for item in body.items:
        if isinstance(item, Block):
            inner = item.body
            rng = inner.range
            to = moved.get((rng.start.line, rng.start.column)) if rng is not None else None
            new = Body(inner.items, to) if to is not None else _bodies_at_block_types(inner, moved)
            if new is not inner:
                item = Block(item.type, item.labels, new, item.range, item.label_ranges, item.origins)
                changed = True
        items.append(item)
    return Body(tuple(items), body.range) if changed else body


def with_hcl_errors(
    text: str,
    filename: str,
    result: tuple[Body, Diagnostics],
    options: Options,
    read: Callable[[str, str, Options], tuple[Body, Diagnostics]],
) -> tuple[Body, Diagnostics]:
    """The readers' ``result`` for ``text`` with HCL's syntax errors in place of theirs, and the
    partial body HCL's recovery keeps (what Terraform's decoder then reads) in place of theirs
    when it can be had (``_hcl_errors.read_config``), read with ``read`` (the readers)."""
    body, diags = result
    found, repaired, placeholders = read_config(text)
    if not found:
        # HCL reads the file: what the readers rejected is a construct they cannot read. The
        # build stops (no output could be written without it), as flatten's own refusal.
        out = Diagnostics()
        for d in diags:
            if d.code is Code.UNREADABLE and d.range is not None:
                d = Diagnostic(
                    Severity.ERROR,
                    "Unsupported configuration syntax",
                    "Terraform reads this file, but flatten's reader cannot read the construct here. "
                    "Rewrite it in another form Terraform accepts, and report it to flatten's maintainers.",
                    d.range,
                    refusal=True,
                )
            out.append(d)
        return body, out
    where = _Positions(text, filename)
    first = where.pos(min(d.start for d in found))
    out = Diagnostics(as_diagnostics(found, where))
    if repaired is not None and not config_errors(repaired):
        partial, more = read(repaired, filename, options)
        kept = _Positions(repaired, filename)
        more = Diagnostics(
            dataclasses.replace(d, extra=_DECODER) if _as_written(d, where, kept) else d for d in more
        )
        if not any(_reader_syntax(d) for d in more if d.severity is Severity.ERROR):
            if placeholders:
                moved = _moved(placeholders, where)
                out.extend(_at_block_types(more, moved, filename))
                return _bodies_at_block_types(partial, moved), out
            out.extend(more)
            return partial, out
    for d in diags:
        if _reader_syntax(d):
            continue
        if d.range is not None and (d.range.start.line, d.range.start.column) >= (first.line, first.column):
            continue
        out.append(d)
    return body, out
