"""Rewriting the references of whole blocks, argument by argument, in the mode ``fields.py`` gives each.

Rule for the whole file: only expression-mode values (templates), ``depends_on`` items and
``replace_triggered_by`` items are rewritten; literal, keyword, type and ``ignore_changes``
values are copied unchanged, and single traversals (``provider``, ``moved``, ``import.to``) are
left to the caller, which knows what they address (spec §7.3). A ``dynamic`` block's iterator
name is bound inside its ``content``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from flatten.lang.fields import BlockSchema, Mode
from flatten.lang.model import Attribute, Block, Body, Expr, JsonValue
from flatten.syntax.references import (
    Reference,
    expression_references,
    rewrite_expression,
    rewrite_template,
    simplify_template,
)

__all__ = ["Scope", "rewrite_block", "rewrite_value"]


@dataclass(slots=True)
class Scope:
    """How references are rewritten: ``replace`` answers one reference with new source (None: keep).

    ``expand`` answers a whole ``depends_on`` item with the items replacing it (None: rewrite it
    as an ordinary reference).
    """

    replace: Callable[[Reference, str], str | None]
    expand: Callable[[Reference], list[str] | None] = field(default=lambda ref: None)
    functions: bool = False  # also answer provider-defined function names (root ``provider``)


def rewrite_value(value: JsonValue, scope: Scope, bound: frozenset[str] = frozenset()) -> JsonValue:
    """Return an expression-mode JSON value with its references rewritten (object keys too)."""
    if isinstance(value, str):
        new = rewrite_template(
            value, lambda r: scope.replace(r, value), bound=bound, functions=scope.functions
        )
        return simplify_template(new) if new != value else value
    if isinstance(value, list):
        return [rewrite_value(v, scope, bound) for v in value]
    if isinstance(value, dict):
        return {str(rewrite_value(k, scope, bound)): rewrite_value(v, scope, bound) for k, v in value.items()}
    return value


def rewrite_source(text: str, scope: Scope, bound: frozenset[str] = frozenset()) -> str:
    """Return bare expression source (not a template) with its references rewritten."""
    return rewrite_expression(text, lambda r: scope.replace(r, text), bound=bound, functions=scope.functions)


def rewrite_depends_on(items: JsonValue, scope: Scope) -> JsonValue:
    """Return a ``depends_on`` list with each item rewritten or expanded, duplicates dropped."""
    if not isinstance(items, list):
        return items
    out: list[JsonValue] = []
    for item in items:
        if not isinstance(item, str):
            out.append(item)
            continue
        refs = expression_references(item)
        expanded = (
            scope.expand(refs[0])
            if len(refs) == 1
            and refs[0].start == len(item) - len(item.lstrip())
            and refs[0].end == len(item.rstrip())
            else None
        )
        for new in expanded if expanded is not None else [rewrite_source(item, scope)]:
            if new not in out:
                out.append(new)
    return out


def _attribute(attr: Attribute, mode: Mode | None, scope: Scope, bound: frozenset[str]) -> Attribute:
    value = attr.expr.value
    if mode is Mode.EXPR:
        new = rewrite_value(value, scope, bound)
    elif mode is Mode.TRAVERSAL_LIST and attr.name == "depends_on":
        new = rewrite_depends_on(value, scope)
    elif mode is Mode.EXPR_SOURCE_LIST and isinstance(value, list):
        new = [rewrite_source(v, scope, bound) if isinstance(v, str) else v for v in value]
    else:
        return attr
    if new == value:
        return attr
    return replace(attr, expr=Expr(new, attr.expr.range))


def _iterator(block: Block) -> str:
    attr = block.body.attribute("iterator")
    if attr is not None and isinstance(attr.value, str):
        return attr.value
    return block.labels[0] if block.labels else ""


def rewrite_body(body: Body, schema: BlockSchema, scope: Scope, bound: frozenset[str] = frozenset()) -> Body:
    """Return ``body`` with every argument rewritten according to its mode in ``schema``."""
    items: list[Attribute | Block] = []
    for item in body.items:
        if isinstance(item, Attribute):
            items.append(_attribute(item, schema.attribute_mode(item.name), scope, bound))
            continue
        nested = schema.nested(item.type, len(item.labels))
        if nested is None:
            items.append(item)
            continue
        inner = bound
        if item.type == "dynamic" and "content" in nested.blocks:
            # for_each and labels are evaluated outside; content sees the iterator.
            outer = rewrite_body(
                Body(tuple(i for i in item.body.items if isinstance(i, Attribute)), item.body.range),
                nested,
                scope,
                bound,
            )
            inner = bound | {_iterator(item)}
            rewritten: list[Attribute | Block] = list(outer.items)
            for sub in item.body.blocks:
                sub_schema = nested.nested(sub.type, len(sub.labels))
                rewritten.append(
                    replace(sub, body=rewrite_body(sub.body, sub_schema, scope, inner)) if sub_schema else sub
                )
            items.append(replace(item, body=Body(tuple(rewritten), item.body.range)))
            continue
        items.append(replace(item, body=rewrite_body(item.body, nested, scope, inner)))
    return Body(tuple(items), body.range)


def rewrite_block(block: Block, schema: BlockSchema, scope: Scope) -> Block:
    """Return a top-level block with its references rewritten (labels untouched)."""
    return replace(block, body=rewrite_body(block.body, schema, scope))
