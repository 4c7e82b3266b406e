"""What the later stages read of one merged module besides emitting it: its view from outside.

Rule for the whole file: ``outside_view(a) == outside_view(b)`` means that building a tree with
module ``b`` in place of ``a`` (same directory, same files listed) gives the same module graph,
the same provider checks and the same output for every *other* module, so only this module's
own output file (and the manifest's digest of it) can differ. The incremental rebuild
(flatten/shell/incremental.py) relies on it, and falls back to a full build whenever two views
differ. A stage that starts reading more of a module must add it here; tests/test_incremental.py
checks the rule by building random edits both ways.

What the stages read, and so what the view keeps:

- ``module`` blocks (graph.py: source, version, arguments, count/for_each, providers; layout's
  rewritten calls), ``provider`` and ``terraform`` blocks (providers/declarations.py;
  graph.py's backend and cloud warnings), ``import`` blocks, and any block type not named below:
  whole.
- ``resource``, ``data`` and ``ephemeral`` blocks: type, labels and ranges, and their ``provider``,
  ``for_each``, ``count`` and ``depends_on`` arguments and ``lifecycle`` blocks whole
  (providers/declarations.py reads ``provider`` and ``for_each``; the rest is margin).
- ``variable`` blocks: labels, ranges and which arguments and nested blocks are written
  (inputs.py: the declared names and whether a ``default`` is set), not their values; with
  static evaluation (OpenTofu: a call's ``source`` may read variables and locals) whole.
- ``locals`` blocks: nothing but their ranges; with static evaluation whole.
- ``output`` blocks: labels and ranges (nothing reads their values before emitting).
- the files every block names through ``path.module``/``path.root`` (layout.py copies them:
  stages/pathreads.py).

Ranges are kept as file, line and column (not byte offsets): an edit that changes a value's
length moves every later byte offset, but only a line added or removed moves what a diagnostic
would show. The view is compared only between two versions of one module directory.

The view of a large module is large (a 10 MB module's is about 80 MiB of tuples), so it can be
taken a part at a time (``outside_parts``: a caller may hash each part and let it go), and each
top-level body is read with ``peek_items``: a module from the module cache is not left decoded
(issue 38, item 13: a rebuild held the old module decoded and its view beside the new one).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator

from flatten.lang.model import Attribute, Block, Body, Module, Range
from flatten.lang.options import Options
from flatten.stages.pathreads import path_reads

__all__ = ["outside_parts", "outside_view"]

_RESOURCES = frozenset({"resource", "data", "ephemeral"})
_RESOURCE_ARGUMENTS = frozenset({"provider", "for_each", "count", "depends_on"})
_RESOURCE_BLOCKS = frozenset({"lifecycle"})


def _at(r: Range | None) -> Hashable:
    if r is None:
        return None
    return (r.filename, r.start.line, r.start.column, r.end.line, r.end.column)


def _head(block: Block) -> Hashable:
    return (
        block.type,
        block.labels,
        _at(block.range),
        tuple(_at(r) for r in block.label_ranges),
        tuple(_at(r) for r in block.origins),
    )


def _attribute(attr: Attribute) -> Hashable:
    return ("=", attr.name, repr(attr.value), _at(attr.name_range), _at(attr.expr.range))


def _body(body: Body) -> Hashable:
    return (
        _at(body.range),
        tuple(_attribute(i) if isinstance(i, Attribute) else _whole(i) for i in body.peek_items()),
    )


def _whole(block: Block) -> Hashable:
    return (_head(block), _body(block.body))


def _shape(block: Block) -> Hashable:
    """The block's head and the names of what its body sets, without values."""
    return (
        _head(block),
        tuple(
            ("=", i.name, _at(i.name_range)) if isinstance(i, Attribute) else _head(i)
            for i in block.body.peek_items()
        ),
    )


def _resource(block: Block) -> Hashable:
    kept = tuple(
        _attribute(i) if isinstance(i, Attribute) else _whole(i)
        for i in block.body.peek_items()
        if (isinstance(i, Attribute) and i.name in _RESOURCE_ARGUMENTS)
        or (isinstance(i, Block) and i.type in _RESOURCE_BLOCKS)
    )
    return (_head(block), kept)


def outside_parts(module: Module, *, options: Options) -> Iterator[Hashable]:
    """Return the parts of ``outside_view(module)``, one at a time, in its order."""
    static = options.dialect.allows("static_evaluation")
    yield module.directory
    yield module.files
    yield path_reads(module)
    for block in module.blocks:
        kind = block.type
        if kind in _RESOURCES:
            yield _resource(block)
        elif kind == "variable" and not static:
            yield _shape(block)
        elif kind in ("locals", "output") and not static:
            yield _head(block)
        else:
            yield _whole(block)


def outside_view(module: Module, *, options: Options) -> Hashable:
    """Return what the graph, the provider checks and the other modules' output read of ``module``
    (see the module docstring); two versions of a module with equal views build the same tree
    apart from the module's own output file."""
    return tuple(outside_parts(module, options=options))
