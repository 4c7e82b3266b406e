"""Provider version constraints in the canonical form Terraform prints them.

``terraform providers`` (and the dependency lock file) show a module's constraints for a provider
through ``providerreqs.VersionConstraintsString``: every term parsed Ruby-style, omitted version
parts written as zero (``>= 2.23`` -> ``>= 2.23.0``), duplicates dropped, terms sorted by boundary
version then by operator, and ``~>`` keeping two parts when it was written with one or two
(``~> 3`` -> ``~> 3.0``) and three when it was written with three. docs/providers.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["canonical_constraints"]

_TERM = re.compile(
    r"\s*(~>|>=|<=|!=|>|<|=)?\s*"
    r"v?([0-9]+)(?:\.([0-9]+))?(?:\.([0-9]+))?"
    r"(?:-([0-9A-Za-z.-]+))?(?:\+([0-9A-Za-z.-]+))?\s*"
)

# Terraform's order for terms with the same boundary: lower bounds first, exclusions last.
_PRIORITY = MappingProxyType({">": 1, ">=": 2, "=": 3, "~>patch": 4, "~>minor": 5, "<=": 6, "<": 7, "!=": 8})


@dataclass(frozen=True, slots=True)
class _Term:
    operator: str  # a key of _PRIORITY
    major: int
    minor: int
    patch: int
    prerelease: str
    metadata: str

    def sort_key(self) -> tuple[object, ...]:
        # Semantic-version precedence: a prerelease sorts before its release; then metadata's
        # text (Terraform needs *some* order there), then the operator.
        pre: tuple[object, ...] = (
            (1,) if not self.prerelease else (0, *map(_identifier, self.prerelease.split(".")))
        )
        return (self.major, self.minor, self.patch, pre, self.metadata, _PRIORITY[self.operator])

    def __str__(self) -> str:
        op = {"=": "", "~>patch": "~> ", "~>minor": "~> "}.get(self.operator, self.operator + " ")
        text = f"{op}{self.major}.{self.minor}"
        if self.operator != "~>minor":
            text += f".{self.patch}"
        if self.prerelease:
            text += "-" + self.prerelease
        if self.metadata:
            text += "+" + self.metadata
        return text


def _identifier(part: str) -> tuple[int, int | str]:
    # Numeric identifiers sort before alphanumeric ones, and numerically among themselves.
    return (0, int(part)) if part.isdigit() else (1, part)


def _parse(text: str) -> list[_Term] | None:
    terms = []
    for item in text.split(","):
        m = _TERM.fullmatch(item)
        if m is None:
            return None
        op, major, minor, patch, pre, meta = m.groups()
        if op == "~>":
            op = "~>patch" if patch is not None else "~>minor"
        terms.append(_Term(op or "=", int(major), int(minor or 0), int(patch or 0), pre or "", meta or ""))
    return terms


def canonical_constraints(texts: Iterable[str]) -> str:
    """Return the constraints ``texts`` (one string per declaration) as ``terraform providers`` shows them.

    A string flatten cannot read is kept as written (its own diagnostic comes from validation).

    >>> canonical_constraints([">= 2.23, < 6, != 3.1", "~> 3", ">= 2.23.0"])
    '>= 2.23.0, ~> 3.0, != 3.1.0, < 6.0.0'
    """
    terms: set[_Term] = set()
    unread: list[str] = []
    for text in texts:
        parsed = _parse(text)
        if parsed is None:
            unread.append(text.strip())
        else:
            terms.update(parsed)
    ordered = [str(t) for t in sorted(terms, key=_Term.sort_key)]
    return ", ".join(ordered + [t for t in unread if t not in ordered])
