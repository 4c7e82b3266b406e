"""Resource and module addresses as ``moved`` blocks see them: parse, match and move.

Rule for the whole file: a pattern (a ``moved`` block's ``from``) carries no instance keys and
matches any instance; keys of the address are kept where the pattern and the destination share
a module prefix, and on the last step when both ends are the same kind (Terraform moves every
instance along with its call or resource).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["move_address", "split_address"]

_SEGMENT = re.compile(
    r"(module\.[^.\[\]]+|(?:data\.|ephemeral\.)?[^.\[\]]+\.[^.\[\]]+)"
    r"(\[(?:\"(?:[^\"\\]|\\.)*\"|[^\]\"]*)\])?(?:\.|$)"
)


def split_address(address: str) -> list[tuple[str, str]] | None:
    """Return ``[(step, key), ...]`` for an absolute address, or None when it is not one.

    >>> split_address('module.a[0].module.b.terraform_data.r["x"]')
    [('module.a', '[0]'), ('module.b', ''), ('terraform_data.r', '["x"]')]
    """
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(address):
        m = _SEGMENT.match(address, i)
        if m is None:
            return None
        out.append((m.group(1), m.group(2) or ""))
        i = m.end()
    return out


def _join(segments: Sequence[tuple[str, str]]) -> str:
    return ".".join(step + key for step, key in segments)


def _move(
    address: list[tuple[str, str]], frm: list[tuple[str, str]], to: list[tuple[str, str]]
) -> list[tuple[str, str]] | None:
    if len(address) < len(frm) or any(a[0] != f[0] for a, f in zip(address, frm, strict=False)):
        return None
    shared = 0
    while shared < min(len(frm), len(to)) - 1 and frm[shared][0] == to[shared][0]:
        shared += 1
    out = [(to[k][0], address[k][1] if k < shared else "") for k in range(len(to))]
    last_from, last_to = frm[-1][0], to[-1][0]
    if last_from.startswith("module.") == last_to.startswith("module."):
        out[-1] = (last_to, address[len(frm) - 1][1])
    return out + list(address[len(frm) :])


class Moves:
    """``(from, to)`` pairs, parsed once and indexed by their first step, applied in order.

    A move applies only to an address that starts with its ``from`` steps, so only the moves
    whose first step is the address's can: looking up those keeps checking every resource of
    a tree against every move linear, not quadratic.
    """

    def __init__(self, moves: Sequence[tuple[str, str]]) -> None:
        self._by_first: dict[str, list[tuple[int, list[tuple[str, str]], list[tuple[str, str]]]]] = {}
        for n, (frm, to) in enumerate(moves):
            f, t = split_address(frm), split_address(to)
            if f and t:
                self._by_first.setdefault(f[0][0], []).append((n, f, t))

    def apply(self, address: str) -> str:
        parsed = split_address(address)
        if not parsed:
            return address
        last = -1
        while True:
            for n, f, t in self._by_first.get(parsed[0][0], ()):
                if n <= last:
                    continue
                moved = _move(parsed, f, t)
                if moved is not None:
                    last, parsed = n, moved
                    break
            else:
                return _join(parsed)


def move_address(address: str, moves: Sequence[tuple[str, str]]) -> str:
    """Return where ``address`` ends up after ``moves`` (``(from, to)`` pairs, applied in order).

    >>> move_address("module.a.module.k[1].terraform_data.r", [("module.a.module.k", "module.a__k")])
    'module.a__k[1].terraform_data.r'
    >>> move_address("module.k[1].module.c.t.n", [("module.k.module.c.t.n", "module.k.t.c__n")])
    'module.k[1].t.c__n'
    """
    return Moves(moves).apply(address)
