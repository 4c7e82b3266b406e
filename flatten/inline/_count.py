"""A call with a literal ``count`` or ``for_each`` split into one plain call per instance, so each
can be inlined.

Rule for the whole file: ``module "x" { count = 2 }`` has the instances ``module.x[0]`` and
``module.x[1]``, each a module instance of its own. When the count is a literal number, the call
becomes the calls ``x__0`` and ``x__1`` (without ``count``, ``count.index`` in their arguments
written as the instance's number), which ``_step.py`` then inlines one by one, with
``module.x[0]`` as the original address in the ``moved`` blocks. In the caller, ``module.x`` is
Terraform's tuple of the instances' objects, so every reference to it becomes the tuple
``[module.x__0, module.x__1]`` (``module.x[0].id`` keeps its meaning: element 0's ``id``), and
``depends_on = [module.x]`` lists every instance. A count that is not a literal number (a
variable, an expression) is left a call: which instances exist is known only at plan time.

``for_each`` is the same with keys: ``toset(["a", "b"])`` (a set of string literals) or an object
literal of constants gives the instances ``module.x["a"]`` and ``module.x["b"]`` in the keys'
lexical order (Terraform's), the calls ``x__a`` and ``x__b`` with ``each.key`` written as the key
and ``each.value`` as the element's value, and ``module.x`` becomes the object ``{"a" =
module.x__a, "b" = module.x__b}`` (Terraform's object of the instances). Any other ``for_each``
(a variable, a function of one, a list, which Terraform rejects) is left a call.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal
from types import MappingProxyType

from flatten.lang.model import Block, Expr, JsonValue
from flatten.syntax.evaluate import Unsupported, constant_expression
from flatten.syntax.references import (
    ExpressionError,
    Reference,
    hcl_string,
    json_to_hcl,
    literal_to_expression,
    rewrite_expression,
    single_interpolation,
)

from ._rewrite import Scope, rewrite_block
from ._step import Context, HostRule, Work, position, taken_names

__all__ = ["MAX_INSTANCES", "Instances", "for_instance", "literal_count", "literal_for_each", "split_call"]

# More instances than this would multiply the module's blocks past what a reader can follow.
MAX_INSTANCES = 16

_TOSET = re.compile(r"toset\s*\((.*)\)\Z", re.DOTALL)
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True, slots=True)
class Instances:
    """The instances of a call whose ``count`` or ``for_each`` is literal.

    ``keys`` are ints for ``count`` and strings for ``for_each``; ``values`` holds each
    ``for_each`` instance's ``each.value`` as native HCL source (empty for ``count``).
    """

    keys: tuple[int, ...] | tuple[str, ...]
    values: tuple[str, ...] = ()

    @staticmethod
    def counted(n: int) -> Instances:
        return Instances(tuple(range(n)))


def literal_count(value: JsonValue) -> int | None:
    """Return the count when ``value`` is a literal whole number (``2``, ``"2"``, ``"${2}"``), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("${") and text.endswith("}"):
            text = text[2:-1].strip()
        try:
            value = Decimal(text)
        except ArithmeticError:
            return None
    if isinstance(value, (int, Decimal)) and value == int(value) and value >= 0:
        return int(value)
    return None


def literal_for_each(value: JsonValue) -> Instances | None:
    """Return the instances of a ``for_each`` that is ``toset()`` of string literals or an object
    of constants, else None (known only at plan time, or rejected by Terraform)."""
    source = single_interpolation(value) if isinstance(value, str) else None
    if isinstance(value, dict):  # an object constructor read as JSON (its values expressions)
        try:
            source = json_to_hcl(value)
        except ExpressionError:
            return None
    if source is None:
        return None
    wrapped = _TOSET.match(source)
    try:
        found = constant_expression(wrapped.group(1) if wrapped else source)
    except Unsupported:
        return None
    if wrapped:
        if not isinstance(found, list) or not all(isinstance(k, str) for k in found):
            return None  # Terraform: "for_each" supports maps and sets of strings
        keys = sorted({k for k in found if isinstance(k, str)})
        return Instances(tuple(keys), tuple(hcl_string(k) for k in keys))
    if not isinstance(found, dict):
        return None
    keys = sorted(found)
    return Instances(tuple(keys), tuple(json_to_hcl(literal_to_expression(found[k])) for k in keys))


def split_call(ctx: Context, host: Work, name: str, each: Instances) -> list[tuple[str, str]]:
    """Split the call ``name`` of ``host`` into one plain call per instance, in place; return their
    (name, origin).

    Only the call's own block is touched: the caller's references to ``module.<name>`` are
    rewritten later, with those of every other call, in ``settle``'s one pass (``HostRule.parts``
    makes them the instances' values), so a split costs what the call holds, not the caller's
    size (issue 42). Changes go through ``host.journal``, which undoes them when an instance
    cannot be inlined.
    """
    if host.calls is None:
        host.calls = {b.labels[0]: b for b in host.module.blocks_of("module") if b.labels}
    if host.taken is None:
        host.taken = taken_names(host.module)
    taken, calls, j = host.taken, host.calls, host.journal
    instances: list[tuple[str, str]] = []
    for key in each.keys:
        base, n = f"{name}__{key if isinstance(key, int) else _UNSAFE.sub('_', key)}", 2
        new = base
        while f"module.{new}" in taken or new in calls:
            new, n = f"{base}_{n}", n + 1
        j.add(taken, f"module.{new}")
        instances.append((new, f"module.{name}[{key if isinstance(key, int) else hcl_string(key)}]"))

    schema = ctx.schema.blocks["module"]
    b = calls[name]
    items = tuple(i for i in b.body.items if getattr(i, "name", None) not in ("count", "for_each"))
    plain = replace(b, body=replace(b.body, items=items))
    split: list[Block] = []
    for i, (new, _) in enumerate(instances):
        scope = Scope(_instance(each, i))
        split.append(replace(_providers(rewrite_block(plain, schema, scope), scope), labels=(new,)))
    at = position(host.module.blocks, b, host.hint)
    blocks = host.module.blocks
    host.module = replace(host.module, blocks=blocks[:at] + tuple(split) + blocks[at + 1 :])
    host.hint = at
    j.pop(calls, name)
    j.update(calls, {blk.labels[0]: blk for blk in split})
    keys = tuple(str(k) for k in each.keys) if each.values else None
    rule = HostRule(MappingProxyType({}), "", (), tuple(new for new, _ in instances), keys)
    j.update(host.pending, {name: rule})
    return instances


def _instance(each: Instances, i: int) -> Callable[[Reference, str], str | None]:
    """The references of instance ``i`` in its call's arguments: ``count.index``, ``each.key``
    and ``each.value`` (with whatever follows it)."""
    key = each.keys[i]

    def answer(ref: Reference, text: str) -> str | None:
        if ref.root == "count" and ref.name(1) == "index" and isinstance(key, int):
            return str(key)
        if ref.root == "each" and ref.name(1) == "key" and isinstance(key, str):
            return hcl_string(key) + ref.tail(text, 1)
        if ref.root == "each" and ref.name(1) == "value" and each.values:
            return f"({each.values[i]})" + ref.tail(text, 1)
        return None

    return answer


def _providers(block: Block, scope: Scope) -> Block:
    """Return the call with ``each.key`` written out in its ``providers`` map (OpenTofu's
    ``aws.by_region[each.key]``), which the schema leaves to the caller as traversals."""
    attr = block.body.attribute("providers")
    if attr is None or not isinstance(attr.value, dict):
        return block
    passes: dict[str, JsonValue] = {}
    for k, v in attr.value.items():
        passes[k] = v
        if isinstance(v, str):
            with contextlib.suppress(ExpressionError):  # kept as written: the step reports it
                passes[k] = rewrite_expression(v, _with_text(scope, v))
    if passes == attr.value:
        return block
    new = replace(attr, expr=Expr(passes, attr.expr.range))
    items = tuple(new if item is attr else item for item in block.body.items)
    return replace(block, body=replace(block.body, items=items))


def _with_text(scope: Scope, text: str) -> Callable[[Reference], str | None]:
    return lambda ref: scope.replace(ref, text)


def for_instance(child: Work, each: Instances, i: int) -> Work:
    """Return ``child`` as instance ``i`` sees it: the instance keys of ``for_each`` providers
    passed to it as ``aws.by_region[each.key]`` written out (``_providers``)."""
    scope = Scope(_instance(each, i))
    instances = dict(child.instances)
    for key, text in child.instances.items():
        with contextlib.suppress(ExpressionError):  # kept as written: the step reports it
            instances[key] = rewrite_expression(text, _with_text(scope, text))
    return replace(child, instances=instances) if instances != child.instances else child
