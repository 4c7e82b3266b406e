"""A call with a literal ``count`` split into one plain call per instance, so each can be inlined.

Rule for the whole file: ``module "x" { count = 2 }`` has the instances ``module.x[0]`` and
``module.x[1]``, each a module instance of its own. When the count is a literal number, the call
becomes the calls ``x__0`` and ``x__1`` (without ``count``, ``count.index`` in their arguments
written as the instance's number), which ``_step.py`` then inlines one by one, with
``module.x[0]`` as the original address in the ``moved`` blocks. In the caller, ``module.x`` is
Terraform's tuple of the instances' objects, so every reference to it becomes the tuple
``[module.x__0, module.x__1]`` (``module.x[0].id`` keeps its meaning: element 0's ``id``), and
``depends_on = [module.x]`` lists every instance. A count that is not a literal number (a
variable, an expression) is left a call: which instances exist is known only at plan time.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from flatten.lang.model import Block, JsonValue
from flatten.syntax.references import Reference

from ._rewrite import Scope, rewrite_block
from ._step import Context, Work

__all__ = ["MAX_INSTANCES", "literal_count", "split_call"]

# More instances than this would multiply the module's blocks past what a reader can follow.
MAX_INSTANCES = 16


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


def split_call(ctx: Context, host: Work, name: str, count: int) -> tuple[Work, list[tuple[str, str]]]:
    """Return ``host`` with the call ``name`` split into ``count`` plain calls, and their (name, origin)."""
    taken = {b.labels[0] for b in host.module.blocks_of("module") if b.labels}
    instances: list[tuple[str, str]] = []
    for i in range(count):
        base, n = f"{name}__{i}", 2
        new = base
        while new in taken:
            new, n = f"{base}_{n}", n + 1
        taken.add(new)
        instances.append((new, f"module.{name}[{i}]"))
    whole = "[" + ", ".join(f"module.{new}" for new, _ in instances) + "]"

    def host_replace(ref: Reference, text: str) -> str | None:
        if ref.root == "module" and ref.name(1) == name:
            return whole + ref.tail(text, 1)
        return None

    def host_expand(ref: Reference) -> list[str] | None:
        if ref.root == "module" and ref.name(1) == name and len(ref.steps) == 1:
            return [f"module.{new}" for new, _ in instances]
        return None

    schema = ctx.schema.blocks["module"]
    blocks: list[Block] = []
    for b in host.module.blocks:
        if b.type == "module" and b.labels and b.labels[0] == name:
            items = tuple(i for i in b.body.items if getattr(i, "name", None) != "count")
            plain = replace(b, body=replace(b.body, items=items))
            for i, (new, _) in enumerate(instances):

                def index(ref: Reference, text: str, i: int = i) -> str | None:
                    return str(i) if ref.root == "count" and ref.name(1) == "index" else None

                blocks.append(replace(rewrite_block(plain, schema, Scope(index)), labels=(new,)))
            continue
        block_schema = ctx.schema.blocks.get(b.type)
        scope = Scope(host_replace, host_expand)
        blocks.append(rewrite_block(b, block_schema, scope) if block_schema is not None else b)
    module = replace(host.module, blocks=tuple(blocks))
    # Fresh tables: the instances' steps grow them in place, and when one instance cannot be
    # inlined the caller goes on with ``host`` as it was.
    split = Work(
        host.node,
        module,
        dict(host.targets),
        dict(host.origins),
        dict(host.kept),
        dict(host.notes),
        dict(host.copies),
        dict(host.pending),
        instances=dict(host.instances),
    )
    return split, instances
