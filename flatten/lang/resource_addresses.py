"""Terraform's reading of a traversal as a resource or module address: a ``moved`` block's
``from`` and ``to`` and an ``import`` block's ``to`` (terraform internal/addrs/parse_target.go
``parseResourceInstanceUnderModule``, internal/addrs/module_instance.go
``parseModuleInstancePrefix``, internal/addrs/move_endpoint.go ``ParseMoveEndpoint``).

The traversal comes from the one reference scanner (syntax/references.py): a ``Reference`` whose
offsets are those of the expression's text. Only the outcomes below are modelled; any other shape
(an index after ``module``, a reserved word or an ephemeral or list resource, whose rules vary by
release) gives ``None``: nothing is reported for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from flatten.lang.model import Reference

__all__ = ["AddressProblem", "Endpoint", "parse_endpoint"]


@dataclass(frozen=True)
class AddressProblem:
    """An "Invalid address" diagnostic: its detail and the offsets of its subject in the text."""

    detail: str
    start: int
    end: int


@dataclass(frozen=True)
class Endpoint:
    """What the traversal names: a module (instance) or a resource (instance), and the mode."""

    kind: Literal["module", "resource"]
    data: bool = False
    problem: AddressProblem | None = None


# Words parseResourceInstanceUnderModule reads as the resource mode, or refuses, depending on the
# release (ephemeral 1.10, list 1.14, the reserved words later): not modelled.
_UNMODELLED_ROOTS = frozenset(
    {"ephemeral", "list", "count", "each", "local", "path", "self", "terraform", "var", "template"}
    | {"lazy", "arg"}
)

_Step = tuple[str, "str | int", int, int]  # kind, key, start, end


def _invalid(data: bool, detail: str, first: _Step, last: _Step) -> Endpoint:
    return Endpoint("resource", data, AddressProblem(detail, first[2], last[3]))


def parse_endpoint(ref: Reference) -> Endpoint | None:
    """``ParseMoveEndpoint`` / ``ParseTarget`` on ``ref`` (a whole static traversal), or None
    where the rule is not modelled."""
    # (kind, key, start, end) per step, the root first; an attribute step's range starts at its
    # dot, as HCL's TraverseAttr range does.
    steps: list[_Step] = [("attr", ref.root, ref.start, ref.ends[0])]
    steps.extend((kind, key, ref.ends[k], ref.ends[k + 1]) for k, (kind, key) in enumerate(ref.steps))
    i = 0
    # parseModuleInstancePrefix: "module" NAME, then an optional index, as many times as given.
    while i < len(steps) and steps[i][:2] == ("attr", "module"):
        if i + 1 >= len(steps) or steps[i + 1][0] != "attr":
            return None  # "Invalid address operator" (not modelled)
        i += 2
        if i < len(steps) and steps[i][0] == "index":
            i += 1
    remain = steps[i:]
    if not remain:
        return Endpoint("module")
    if remain[0][0] != "attr":
        return None
    data = False
    if remain[0][1] in ("data", "resource"):
        data = remain[0][1] == "data"
        remain = remain[1:]
        if not remain:
            return None
    elif remain[0][1] in _UNMODELLED_ROOTS:
        return None
    if len(remain) < 2:
        detail = "Resource specification must include a resource type and name."
        return _invalid(data, detail, remain[0], remain[-1])
    if remain[0][0] != "attr":
        return None
    if remain[1][0] != "attr":
        return _invalid(data, "A resource name is required.", remain[1], remain[1])
    remain = remain[2:]
    if len(remain) > 1:
        return _invalid(data, "Unexpected extra operators after address.", remain[1], remain[1])
    if remain and remain[0][0] != "index":
        return _invalid(data, "Resource instance key must be given in square brackets.", remain[0], remain[0])
    return Endpoint("resource", data)
