"""Canonical Terraform JSON: one function owns the bytes (flatten/stages/output.py writes the tree).

Same input, same bytes (style.md §10): keys are sorted wherever their order has no meaning
(block types, labels, argument names, object keys), and kept in source order where it does
(repeated nested blocks, provisioners, ``moved``/``import``/``removed`` lists). Labelled nested
blocks use the array-of-objects form so their relative order survives (spec §7.5). Numbers are
written exactly (spec §7.1). Emitting a module and loading the result gives the same module,
so building the output again reproduces it byte for byte.
"""

from __future__ import annotations

import io
import json
import json.encoder
from collections.abc import Callable, Mapping
from decimal import Context, Decimal
from operator import attrgetter
from types import MappingProxyType
from typing import Protocol, cast

from flatten.lang.attributes_as_blocks import attribute_blocks
from flatten.lang.blocks import Emit, emit_form
from flatten.lang.model import Attribute, Block, Body, JsonValue, Module, Range
from flatten.stages.output import MANIFEST_NAME, Interrupted, OutputError, write_tree
from flatten.syntax.references import ExpressionError, template_references

# MANIFEST_NAME, Interrupted, OutputError and write_tree are re-exported from flatten/stages/output.py.
__all__ = [
    "MANIFEST_NAME",
    "Interrupted",
    "OutputError",
    "body_json",
    "dumps",
    "module_bytes",
    "module_json",
    "write_tree",
]


def _number(value: int | Decimal) -> str:
    if isinstance(value, int):
        return str(value)
    if not value.is_finite():
        raise ValueError(f"not a JSON number: {value}")
    # normalize() rounds to the context precision; give it room for every digit.
    if value.is_zero():
        # Terraform keeps the sign of zero: -0.0 converts to the string "-0" (checked with 1.11).
        return "-0" if value.is_signed() else "0"
    exact = value.normalize(Context(prec=max(28, len(value.as_tuple().digits))))
    if abs(exact.adjusted()) < 64:
        text = format(exact, "f")
        return text.split(".")[0] if exact == exact.to_integral_value() else text
    return str(exact).replace("E", "e")


# What json.dumps(value, ensure_ascii=...) returns for a string, without building a JSONEncoder
# per call (a fifth of emitting a module): the same two C functions it ends in.
_ESCAPE = json.encoder.encode_basestring
_ESCAPE_ASCII = json.encoder.encode_basestring_ascii


def _string(value: str) -> str:
    if value.isascii():
        return _ESCAPE(value)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: keep them representable
        return _ESCAPE_ASCII(value)
    return _ESCAPE(value)


def _sorted_keys(obj: Mapping[str, JsonValue]) -> list[str]:
    keys = list(obj)
    if len(keys) < 2:
        return keys
    # Template keys could collide once evaluated; their order then decides the winner, so keep it.
    # One search of the keys joined by NUL (no "${" can span two of them) instead of one per key.
    joined = "\0".join(keys)
    if "${" in joined or "%{" in joined:
        return keys
    keys.sort()
    return keys


# true, false and null as JSON writes them (an int is written as Python writes it: _number).
_SCALARS: Mapping[object, str] = MappingProxyType({True: "true", False: "false", None: "null"})

# Indentation by depth, made once (deeper levels are made when met).
_PADS = tuple("  " * n for n in range(32))


# Pieces of text are joined every so many (``_write``'s ``done``): a list of millions of small
# strings took three to five times the memory of the text they make (docs/reliability.md, "Memory").
_JOIN_EVERY = 16384
_BIG = 64  # items of an object or array, beyond which the pieces are also counted between items


class _Sink(Protocol):
    """Where joined pieces go: a list of text (``dumps``), or bytes as they come (``module_bytes``)."""

    def append(self, text: str, /) -> None: ...


class _Encoded:
    """Joined pieces encoded as they arrive into one buffer, handed over without a copy
    (``BytesIO.getvalue`` with no export): the module's text is never held beside its bytes, nor
    its bytes twice (joining a list of encoded pieces did; docs/reliability.md, "Memory")."""

    def __init__(self) -> None:
        self.buffer = io.BytesIO()

    def append(self, text: str, /) -> None:
        self.buffer.write(text.encode("utf-8"))


def _write(value: JsonValue, out: list[str], indent: int, sort: bool, done: _Sink | None = None) -> None:
    # Strings, objects and arrays first, by exact type: most of a module's values (a bool is an
    # int, so numbers come after true and false). Hot: every value of every module, so the leaves
    # of an object or array (strings, true, false, null, ints) are written in its loop, without a
    # call, and ASCII strings (nearly all) are escaped without the call to _string.
    kind = type(value)
    if kind is str:
        text = cast(str, value)
        out.append(_ESCAPE(text) if text.isascii() else _string(text))
    elif kind is dict or (kind is not list and isinstance(value, dict)):
        obj = cast("dict[str, JsonValue]", value)
        if not obj:
            out.append("{}")
            return
        pad = _PADS[indent + 1] if indent < 30 else "  " * (indent + 1)
        keys = list(obj)
        if sort and len(keys) > 1:  # _sorted_keys, without the call
            joined = "\0".join(keys)
            if "${" not in joined and "%{" not in joined:
                keys.sort()
        # Pieces are joined when an object or array starts, and between the items of a large one.
        if done is not None and len(out) > _JOIN_EVERY:
            done.append("".join(out))
            out.clear()
        big = done is not None and len(keys) > _BIG
        append = out.append
        append("{\n")
        # Every item ends in ",\n" and the last one's comma is taken back after the loop: the
        # last piece is always this level's (a nested level and the joining below come before it).
        for key in keys:
            if big and len(out) > _JOIN_EVERY and done is not None:
                done.append("".join(out))
                out.clear()
            item = obj[key]
            name = _ESCAPE(key) if key.isascii() else _string(key)
            if type(item) is str:  # a leaf: one piece of text, no call
                text = _ESCAPE(item) if item.isascii() else _string(item)
                append(f"{pad}{name}: {text},\n")
            elif item is True or item is False or item is None:  # the other common leaves
                append(f"{pad}{name}: {_SCALARS[item]},\n")
            elif type(item) is int:
                append(f"{pad}{name}: {item},\n")
            elif type(item) is list and len(item) == 1 and type(item[0]) is str:
                # One string in an array (ignore_changes, depends_on, a lone nested block's
                # label is an object): as the array branch below writes it, without the call.
                first = item[0]
                text = _ESCAPE(first) if first.isascii() else _string(first)
                append(f"{pad}{name}: [\n{pad}  {text}\n{pad}],\n")
            else:
                append(f"{pad}{name}: ")
                _write(item, out, indent + 1, sort, done)
                append(",\n")
        out[-1] = out[-1][:-2] + "\n"
        append(_PADS[indent] + "}" if indent < 30 else "  " * indent + "}")
    elif kind is list or isinstance(value, list):
        items = cast("list[JsonValue]", value)
        if not items:
            out.append("[]")
            return
        pad = _PADS[indent + 1] if indent < 30 else "  " * (indent + 1)
        if done is not None and len(out) > _JOIN_EVERY:
            done.append("".join(out))
            out.clear()
        big = done is not None and len(items) > _BIG
        append = out.append
        append("[\n")
        for item in items:  # as for objects: the last comma is taken back after the loop
            if big and len(out) > _JOIN_EVERY and done is not None:
                done.append("".join(out))
                out.clear()
            if type(item) is str:  # a leaf: one piece of text, no call
                text = _ESCAPE(item) if item.isascii() else _string(item)
                append(f"{pad}{text},\n")
            elif item is True or item is False or item is None:  # the other common leaves
                append(f"{pad}{_SCALARS[item]},\n")
            elif type(item) is int:
                append(f"{pad}{item},\n")
            else:
                append(pad)
                _write(item, out, indent + 1, sort, done)
                append(",\n")
        out[-1] = out[-1][:-2] + "\n"
        append(_PADS[indent] + "]" if indent < 30 else "  " * indent + "]")
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, (int, Decimal)):
        out.append(_number(value))
    elif isinstance(value, str):
        out.append(_string(value))
    else:  # pragma: no cover - the representation holds JSON values only
        raise TypeError(f"not a JSON value: {value!r}")


def dumps(doc: JsonValue, *, sort_keys: bool = True) -> str:
    """Return ``doc`` as canonical JSON text: two-space indent, UTF-8, exact numbers, final newline.

    >>> dumps({"b": 1, "a": [Decimal("0.10")]})
    '{\\n  "a": [\\n    0.1\\n  ],\\n  "b": 1\\n}\\n'
    """
    out: list[str] = []
    done: list[str] = []
    _write(doc, out, 0, sort_keys, done)
    out.append("\n")
    done.append("".join(out))
    return "".join(done)


_NAME = attrgetter("name")
_NO_PATHS: frozenset[str] = frozenset()


def _provenance(origins: tuple[Range, ...]) -> str:
    return "merged from " + ", ".join(f"{r.filename}:{r.start.line}" for r in origins)


def body_json(
    body: Body,
    *,
    origins: tuple[Range, ...] = (),
    provenance: bool = False,
    as_blocks: frozenset[str] = frozenset(),
) -> dict[str, JsonValue]:
    """Return a block body as a Terraform JSON object (nested blocks grouped by type).

    ``as_blocks`` names the provider arguments of this body (dotted paths reach into nested
    blocks) that are attributes written in block form; their blocks become ``dynamic`` blocks
    (flatten.lang.attributes_as_blocks).
    """
    doc: dict[str, JsonValue] = {}
    if provenance and origins:
        doc["//"] = _provenance(origins)
    items = body.peek_items()  # a body from the module cache is not left decoded (model.Body.peek_items)
    attributes: list[Attribute] = []
    nested: list[Block] = []
    for item in items:  # one pass (attributes sort stably: the last of a name wins, as before)
        if isinstance(item, Attribute):
            attributes.append(item)
        elif isinstance(item, Block):
            nested.append(item)
    attributes.sort(key=_NAME)
    for attr in attributes:
        doc[attr.name] = attr.value
    grouped: dict[str, list[Block]] = {}
    for block in nested:
        as_dynamic = block.type in as_blocks and not block.labels and not _refers_to(block.body, block.type)
        grouped.setdefault("dynamic" if as_dynamic else block.type, []).append(block)
    for type_, blocks in grouped.items():
        doc[type_] = _nested_json(type_, blocks, provenance=provenance, as_blocks=as_blocks)
    return doc


def _under(paths: frozenset[str], name: str) -> frozenset[str]:
    """The paths inside nested block ``name``."""
    prefix = name + "."
    return frozenset(p[len(prefix) :] for p in paths if p.startswith(prefix))


def _refers_to(body: Body, root: str) -> bool:
    """Whether an expression in ``body`` refers to ``root`` (a dynamic block's iterator would shadow it).

    Unreadable text counts as a reference, so such a block keeps its plain form.
    """
    stack: list[object] = [body]
    while stack:
        value = stack.pop()
        if isinstance(value, Body):
            stack.extend(a.expr.value for a in value.attributes)
            stack.extend(b.body for b in value.blocks)
        elif isinstance(value, str):
            if "${" in value or "%{" in value:
                try:
                    if any(r.root == root for r in template_references(value)):
                        return True
                except ExpressionError:
                    return True
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
    return False


def _nested_json(
    group: str, blocks: list[Block], *, provenance: bool, as_blocks: frozenset[str]
) -> JsonValue:
    items: list[JsonValue] = []
    for block in blocks:
        inner = _NO_PATHS
        if as_blocks:  # nearly always empty: no set to make
            inner = _under(
                as_blocks, block.labels[0] if block.type == "dynamic" and block.labels else block.type
            )
            if block.type == "dynamic":
                inner = frozenset("content." + p for p in inner)
        value: JsonValue = body_json(
            block.body, origins=block.origins, provenance=provenance, as_blocks=inner
        )
        if block.type != group:
            # An attribute written as a block, in a group of dynamic blocks: one dynamic block
            # whose single iteration gives this body.
            value = {block.type: {"for_each": [0], "content": [value]}}
        for label in reversed(block.labels):
            value = {label: value}
        items.append(value)
    # Always an array, one object per block, even for a single block: Terraform reads an array
    # of objects both as nested blocks and as a provider attribute of list/set-of-object type,
    # while a lone object is rejected for the latter ("set of object required"; docs/conversion.md).
    return items


def _label_tree(blocks: list[Block]) -> dict[str, object]:
    """Blocks nested by their labels: a dict per label but the last, whose value is the block (a
    list of blocks when several share all their labels)."""
    tree: dict[str, object] = {}
    for block in blocks:
        node = tree
        for label in block.labels[:-1]:
            child = node.setdefault(label, {})
            assert isinstance(child, dict)
            node = child
        # A leaf is the block itself until a second one shares its labels: a list for each of
        # 60,000 variables was half of emitting them (tests/reliability/test_memory.py).
        last = block.labels[-1]
        leaf = node.get(last)
        if leaf is None:
            node[last] = block
        elif isinstance(leaf, list):
            leaf.append(block)
        else:
            node[last] = [leaf, block]
    return tree


def _leaf(child: object) -> list[Block]:
    """The blocks at a leaf of ``_label_tree``."""
    if isinstance(child, Block):
        return [child]
    assert isinstance(child, list)
    return child


def _labelled(blocks: list[Block], *, provenance: bool) -> dict[str, JsonValue]:
    """Top-level labelled blocks as nested objects keyed by label; repeats become lists."""
    tree = _label_tree(blocks)

    def render(node: dict[str, object]) -> dict[str, JsonValue]:
        out: dict[str, JsonValue] = {}
        for key in sorted(node):
            child = node[key]
            if isinstance(child, dict):
                out[key] = render(child)
                continue
            child = _leaf(child)
            bodies: list[JsonValue] = [
                body_json(
                    b.body,
                    origins=b.origins,
                    provenance=provenance,
                    as_blocks=attribute_blocks(b.labels[0]) if b.type == "resource" else _NO_PATHS,
                )
                for b in (_provider_order(child) if len(child) > 1 else child)
            ]
            out[key] = bodies[0] if len(bodies) == 1 else bodies
        return out

    return render(tree)


def _provider_order(blocks: list[Block]) -> list[Block]:
    # Several blocks under one label only happen for provider configurations (by alias);
    # their order has no meaning, so the default comes first and aliases sort.
    def alias(block: Block) -> str:
        attr: Attribute | None = block.body.attribute("alias")
        return attr.value if attr is not None and isinstance(attr.value, str) else ""

    if all(b.type == "provider" for b in blocks):
        return sorted(blocks, key=alias)
    return blocks


def _merged(blocks: list[Block], *, provenance: bool) -> dict[str, JsonValue]:
    merged: dict[str, JsonValue] = {}
    origins: tuple[Range, ...] = ()
    for block in blocks:
        merged.update(body_json(block.body))
        origins += block.origins
    if provenance and origins:
        # One object holds every local, so its one "//" names every file that made it.
        merged["//"] = _provenance(origins)
    return merged


def _grouped(module: Module) -> dict[str, list[Block]]:
    grouped: dict[str, list[Block]] = {}
    for block in module.blocks:
        grouped.setdefault(block.type, []).append(block)
    return grouped


def module_json(module: Module, *, provenance: bool = False) -> dict[str, JsonValue]:
    """Return a merged module as one Terraform JSON document."""
    grouped = _grouped(module)
    doc: dict[str, JsonValue] = {}
    for type_ in sorted(grouped):
        blocks = grouped[type_]
        form = emit_form(type_)  # flatten/lang/blocks.py
        if form is Emit.MERGED:
            doc[type_] = _merged(blocks, provenance=provenance)
        elif blocks[0].labels:
            doc[type_] = _labelled(blocks, provenance=provenance)
        elif form is Emit.LIST or len(blocks) > 1:
            doc[type_] = [body_json(b.body, origins=b.origins, provenance=provenance) for b in blocks]
        else:
            doc[type_] = body_json(blocks[0].body, origins=blocks[0].origins, provenance=provenance)
    return doc


# -- the same text, written as it is made ----------------------------------------------------------
# ``dumps(module_json(module))`` held the whole document (a dict per block, beside the model) and
# then its text twice (pieces, joined) and its bytes: about as much as the model again for a
# large module (docs/reliability.md, "Memory"). ``module_bytes`` writes each top-level block's
# object as soon as it is made and drops it, and encodes the text a piece at a time.


# Modules of fewer top-level blocks are emitted whole (module_bytes): the same bytes.
_STREAM_BLOCKS = 512


class _Object:
    """An object of ``keys`` (written in this order) whose values ``value(key)`` makes when written."""

    __slots__ = ("keys", "value")

    def __init__(self, keys: list[str], value: Callable[[str], JsonValue | _Object]) -> None:
        self.keys = keys
        self.value = value


def _write_lazy(value: JsonValue | _Object, out: list[str], indent: int, done: _Sink) -> None:
    """``_write(value, out, indent, True, done)``, for an ``_Object`` too: the same text."""
    if not isinstance(value, _Object):
        _write(value, out, indent, True, done)
        return
    keys = value.keys
    if not keys:
        out.append("{}")
        return
    pad = "  " * (indent + 1)
    last = len(keys) - 1
    out.append("{\n")
    for i, key in enumerate(keys):
        out.append(pad + _string(key) + ": ")
        _write_lazy(value.value(key), out, indent + 1, done)
        out.append(",\n" if i < last else "\n")
        if len(out) > _JOIN_EVERY:
            done.append("".join(out))
            out.clear()
    out.append("  " * indent + "}")


def _labelled_lazy(blocks: list[Block], *, provenance: bool) -> _Object:
    """``_labelled``, with each block's object made when it is written."""
    tree = _label_tree(blocks)

    def render(node: dict[str, object]) -> _Object:
        def value(key: str) -> JsonValue | _Object:
            child = node[key]
            if isinstance(child, dict):
                return render(child)
            child = _leaf(child)
            bodies: list[JsonValue] = [
                body_json(
                    b.body,
                    origins=b.origins,
                    provenance=provenance,
                    as_blocks=attribute_blocks(b.labels[0]) if b.type == "resource" else frozenset(),
                )
                for b in _provider_order(child)
            ]
            return bodies[0] if len(bodies) == 1 else bodies

        # Sorted as _labelled sorts them; dumps then keeps that order (_sorted_keys sorts or keeps).
        return _Object(sorted(node), value)

    return render(tree)


def module_bytes(module: Module, *, provenance: bool = False) -> bytes:
    """Return ``dumps(module_json(module, provenance=provenance)).encode("utf-8")``, the same bytes,
    without holding the whole document or its text at once."""
    if len(module.blocks) < _STREAM_BLOCKS:  # small: the document at once is faster (0.1 ms a module)
        return dumps(module_json(module, provenance=provenance)).encode("utf-8")
    grouped = _grouped(module)

    def value(type_: str) -> JsonValue | _Object:
        blocks = grouped[type_]
        form = emit_form(type_)
        if form is Emit.MERGED:
            return _merged(blocks, provenance=provenance)
        if blocks[0].labels:
            return _labelled_lazy(blocks, provenance=provenance)
        if form is Emit.LIST or len(blocks) > 1:
            return [body_json(b.body, origins=b.origins, provenance=provenance) for b in blocks]
        return body_json(blocks[0].body, origins=blocks[0].origins, provenance=provenance)

    out: list[str] = []
    done = _Encoded()
    _write_lazy(_Object(_sorted_keys(dict.fromkeys(sorted(grouped))), value), out, 0, done)
    out.append("\n")
    done.append("".join(out))
    return done.buffer.getvalue()
