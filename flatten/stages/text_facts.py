"""What the checks learn of a template's text from its scan alone, kept for every module that
holds the same text.

The cycle graph turns a text's references into keys of the reference map (stages/dependencies.py
``reference_key``) and the validate walk into a shape that says what its checks depend on
(stages/references_check.py ``_Checker._shape``). Both are functions of the text (and the names
bound where it is read) and nothing else: its scan is. Each module's checks kept them for the
module only, so a worker computing the parts of a hundred modules that share their expressions
(a generated tree, a module copied per environment) derived each text's again for each: a
tenth of a leaf's part on flat 200 (docs/performance.md, "Thirteenth round"). One ``TextFacts``
passed to the checks of many modules keeps them for all (flatten/shell/checks_ahead.py keeps one
per worker; the graph checks one per build). Sharing changes nothing a check finds.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

__all__ = ["TextFacts"]


@dataclass(slots=True)
class TextFacts:
    """Each text's facts, for the checks of any module (each user bounds what it adds)."""

    # (text, bound names) -> its references' (key, fallback) in the reference map, in order.
    keys: dict[tuple[str, frozenset[str]], tuple[tuple[str, str], ...]] = field(default_factory=dict)
    # text -> the number of its shape; shape -> its number. A walk remembers clean texts by
    # shape number: a number is never given twice (``numbered`` counts on when the shapes are
    # forgotten), so one a walk remembered can never come to name another shape.
    shapes: dict[str, int] = field(default_factory=dict)
    shape_numbers: dict[Hashable, int] = field(default_factory=dict)
    numbered: int = 0  # the numbers given so far

    def shape_number(self, shape: Hashable) -> int:
        """``shape``'s number: the one it was given, else the next."""
        number = self.shape_numbers.get(shape)
        if number is None:
            number = self.shape_numbers[shape] = self.numbered
            self.numbered += 1
        return number

    def forget_shapes(self) -> None:
        """Clear the shapes and their numbers (a bound on memory; numbering goes on)."""
        self.shapes.clear()
        self.shape_numbers.clear()
