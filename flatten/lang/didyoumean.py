"""The "Did you mean ...?" suggestion of HCL and Terraform: one rule, written once.

HCL's ``nameSuggestion`` (hclsyntax/didyoumean.go, json/didyoumean.go) and Terraform's
``didyoumean.NameSuggestion`` (internal/didyoumean/name_suggestion.go) are the same function: the
first of the candidate names, in the order given, whose Levenshtein distance from the given name is
under 3. What differs between callers is only the order of the candidates (a schema's, sorted
names, or Go's map order), so the order is the caller's to choose.

>>> name_suggestion("inptu", ("id", "input", "output"))
'input'
>>> name_suggestion("zzz", ("id", "input"))
''
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["levenshtein", "name_suggestion"]

#: The distance a suggestion must stay under (both sources: "3 was chosen as an experimental figure").
_MAX_COST = 3


def name_suggestion(given: str, names: Iterable[str]) -> str:
    """The first of ``names`` (in their order) within Levenshtein distance 2 of ``given``, or ""."""
    for name in names:
        if levenshtein(given, name) < _MAX_COST:
            return name
    return ""


def levenshtein(a: str, b: str) -> int:
    """The edit distance between ``a`` and ``b`` (insertions, deletions, substitutions)."""
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[len(b)]
