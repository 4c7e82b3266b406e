"""Every expression of one top-level block, listed once for the checks that read them all.

The cycle graph (stages/cycles.py, stages/dependencies.py) and the validate walk
(stages/references_check.py) both read every expression of a module's blocks, each by its own
rules (which arguments are expressions, which nested blocks count, what a ``lifecycle`` block
holds: the rules stay with each check). Each used to walk a block's body and list each value's
templates itself, so every attribute's value was walked twice (docs/performance.md, "Sixth
round"). Now ``block_expressions`` walks a block once and lists each attribute with its
templates and the nested blocks holding it; both checks read that list, and each applies its own
rules to where an attribute is (``Expression.within``).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import NamedTuple, cast

from flatten.lang.model import Attribute, Block, Body, JsonValue, json_strings
from flatten.syntax.dynamic import dynamic_iterators

__all__ = ["BlockExpressions", "Expression", "block_expressions"]

_NONE: frozenset[str] = frozenset()


class Expression(NamedTuple):
    """One attribute of a block's body (or of a block nested in it, at any depth)."""

    attr: Attribute
    # Its value's templates: the strings (object keys included) that may hold a reference or a
    # function call (``${`` or ``%{``), an object's items from the last to the first (the order
    # the validate walk has always reported in; ``json_strings``' ``items_last_first``).
    texts: tuple[str, ...]
    # The nested blocks holding it, outermost first (empty: an attribute of the body itself). One
    # tuple per nested block, shared by its attributes.
    within: tuple[Block, ...]


# ``Expression(attr, texts, within)`` without the Python frame of a named tuple's ``__new__``
# (a module's every attribute is listed: a tenth of the listing's time).
_expression = partial(tuple.__new__, Expression)


class BlockExpressions(NamedTuple):
    """A top-level block's body as the checks read it once: ``body`` (for a block from the module
    cache, decoded for this block only: ``Body.peek``), its attributes at every depth in the
    document's order (each body's attributes before its blocks, depth first), and the names its
    ``dynamic`` blocks bind (``dynamic_iterators``)."""

    body: Body
    expressions: tuple[Expression, ...]
    bound: frozenset[str]

    def nested(self) -> Iterator[tuple[Block, list[Expression]]]:
        """Each block of the body that holds an attribute (at any depth), with those attributes."""
        group: list[Expression] = []
        for e in self.expressions:
            if not e.within:
                continue
            if group and group[0].within[0] is not e.within[0]:
                yield group[0].within[0], group
                group = []
            group.append(e)
        if group:
            yield group[0].within[0], group

    def own(self, name: str) -> Expression | None:
        """The body's own last attribute called ``name`` (``Body.attribute``'s answer)."""
        found = None
        for e in self.expressions:
            if not e.within and e.attr.name == name:
                found = e
        return found


_block_expressions = partial(tuple.__new__, BlockExpressions)  # as ``_expression``


def block_expressions(block: Block) -> BlockExpressions:
    """List ``block``'s expressions (``BlockExpressions``), walking its body once."""
    body = block.body.peek()
    listed: list[Expression] = []
    dynamic = _walk(body, (), listed)
    # Only a ``dynamic`` block or property binds a name: most bodies have none to look for.
    return _block_expressions((body, tuple(listed), dynamic_iterators(body) if dynamic else _NONE))


def _walk(body: Body, within: tuple[Block, ...], listed: list[Expression]) -> bool:
    """List ``body``'s attributes, then its blocks'; whether any of them is ``dynamic``."""
    nested: list[Block] = []
    dynamic = False
    for item in body.items:
        if isinstance(item, Block):
            nested.append(item)
            continue
        name = item.name
        value = item.value
        if isinstance(value, str):  # most values: one string, literal or one template
            texts: tuple[str, ...] = (value,) if "${" in value or "%{" in value else ()
        else:
            dynamic = dynamic or name == "dynamic"
            texts = _templates(value)
        listed.append(_expression((item, texts, within)))
    for block in nested:
        dynamic = _walk(block.body, (*within, block), listed) or dynamic or block.type == "dynamic"
    return dynamic


def _templates(value: JsonValue) -> tuple[str, ...]:
    """The strings of ``value`` that may hold a reference or a call, in ``json_strings``' order
    with ``items_last_first``; an object of scalars (a map of tags, the commonest object value)
    and a list of strings read without the general walk."""
    if isinstance(value, dict):
        found: list[str] = []
        for key, item in reversed(value.items()):
            if isinstance(item, (dict, list)):
                break  # a nested value: the general walk
            if "${" in key or "%{" in key:
                found.append(key)
            if isinstance(item, str) and ("${" in item or "%{" in item):
                found.append(item)
        else:
            return tuple(found)
    elif isinstance(value, list):
        # A list of strings (``ignore_changes``, ``depends_on``, a list of names) in order.
        for item in value:
            if not isinstance(item, str):
                break
        else:
            return tuple([t for t in cast("list[str]", value) if "${" in t or "%{" in t])
    return tuple([t for t in json_strings(value, items_last_first=True) if "${" in t or "%{" in t])
