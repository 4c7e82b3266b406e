"""HCL's ``ParseTraversalAbs`` on the text of a quoted reference (hashicorp/hcl
hclsyntax/parser_traversal.go ``parseTraversal``), as Terraform reads a legacy quoted provider
reference (``provider = "aws.west"``: terraform internal/configs/compat_shim.go
``shimTraversalInString``, which parses the string's value from one column after the quote).

Only the first error is wanted (the parser returns at it): its summary, detail and the offsets
of the token it is at, in the string's value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["TraversalProblem", "traversal_problem"]


@dataclass(frozen=True)
class TraversalProblem:
    summary: str
    detail: str
    start: int
    end: int


# hclsyntax's scanner: an identifier (ID_Start, then ID_Continue or "-"), a number literal, and
# any other character as one token (a bracket, a comma, ...). Spaces and newlines are skipped (the
# traversal parser reads tokens without newlines).
_IDENT = re.compile(r"[^\W\d][\w-]*")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_SPACE = re.compile(r"[ \t\r\n]*")
_QUOTED = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def _token(text: str, i: int) -> tuple[str, int, int]:
    """The kind ("ident", "number", "string", "eof" or the character itself) and span of the
    token at or after ``i``."""
    i = _SPACE.match(text, i).end()  # type: ignore[union-attr]
    if i >= len(text):
        return "eof", i, i
    for kind, pattern in (("ident", _IDENT), ("number", _NUMBER), ("string", _QUOTED)):
        m = pattern.match(text, i)
        if m:
            return kind, i, m.end()
    return text[i], i, i + 1


def traversal_problem(text: str) -> TraversalProblem | None:
    """The first error ``ParseTraversalAbs`` reports on ``text``, or None when it reads."""
    kind, start, end = _token(text, 0)
    if kind != "ident":
        return TraversalProblem("Variable name required", "Must begin with a variable name.", start, end)
    while True:
        kind, start, end = _token(text, end)
        if kind == "eof":
            return None
        if kind == ".":
            kind, start, end = _token(text, end)
            if kind == "ident":
                continue
            detail = (
                "Splat expressions (.*) may not be used here."
                if kind == "*"
                else "Dot must be followed by attribute name."
            )
            return TraversalProblem("Attribute name required", detail, start, end)
        if kind == "[":
            kind, start, end = _token(text, end)
            if kind not in ("number", "string"):
                if kind == "*":
                    return TraversalProblem(
                        "Attribute name required", "Splat expressions ([*]) may not be used here.", start, end
                    )
                return TraversalProblem(
                    "Index value required",
                    "Index brackets must contain either a literal number or a literal string.",
                    start,
                    end,
                )
            kind, start, end = _token(text, end)
            if kind != "]":
                return TraversalProblem(
                    "Unclosed index brackets", "Index key must be followed by a closing bracket.", start, end
                )
            continue
        return TraversalProblem(
            "Invalid character", "Expected an attribute access or an index operator.", start, end
        )
