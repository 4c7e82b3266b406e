"""The one representation every stage shares: a module as Terraform's JSON syntax would state it.

Rule for the whole file: a value is stored in exactly the form Terraform's JSON configuration
syntax gives it at that position (spec §7), so native syntax is converted once, at load, and
everything after that (merge, wiring, emit) sees one kind of value. Every block, attribute and
expression keeps where it came from.

Absent is not null: an argument missing from a body means "not set"; an argument whose value is
``None`` means "set to null".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import TypeAlias, Union

__all__ = [
    "Attribute",
    "Block",
    "Body",
    "Expr",
    "JsonValue",
    "Module",
    "ParsedFile",
    "Pos",
    "Range",
    "make_attribute",
    "make_attribute_at",
    "make_block",
    "make_block_at",
    "make_body",
    "make_body_at",
    "make_expr",
    "make_expr_at",
    "make_pos",
    "make_range",
    "make_range_at",
    "range_args",
    "range_from_key",
]

# Numbers that are not integers are Decimals so that full precision survives (spec §7.1).
JsonValue: TypeAlias = Union[None, bool, int, Decimal, str, list["JsonValue"], dict[str, "JsonValue"]]  # noqa: UP007, RUF036


@dataclass(frozen=True, slots=True, order=True)
class Pos:
    """A position in a source file: 1-based line and column, 0-based byte offset."""

    line: int
    column: int
    byte: int


# A range packs both positions into one int instead of holding two ``Pos`` objects with three
# ints each: every attribute, expression, block and label has a range, and the unpacked form was
# half of a parsed file's memory (docs/reliability.md, "Memory"). The int holds the start's line
# and byte in ``w1`` bits each, then the start's column, the lines and bytes the range spans and
# the end's column in ``w2`` bits each, then ``w2`` and ``w1`` (6 bits each): each field as wide as
# this range needs, so a range deep in a 7 MB file packs into 86 bits (a 36-byte int) where fixed
# 40-bit fields took 240 (56 bytes), and a cache entry stores 11 bytes instead of 26. The packing
# is a function of the six numbers (the widths are their bit lengths), so equal ranges have
# equal keys. A range that ends before it starts, or with a negative or huge position, keeps its
# two ``Pos``. ``start`` and ``end`` build a ``Pos`` when read.
_WIDTH_BITS = 6
_WIDTH_MASK = (1 << _WIDTH_BITS) - 1


def _key(
    line: int, column: int, byte: int, end_line: int, end_column: int, end_byte: int
) -> int | tuple[Pos, Pos]:
    lines = end_line - line
    size = end_byte - byte
    w1 = (line | byte).bit_length()
    w2 = (column | lines | end_column | size).bit_length()
    if line >= 0 and byte >= 0 and column >= 0 and lines >= 0 and end_column >= 0 and size >= 0:
        if w1 <= _WIDTH_MASK and w2 <= _WIDTH_MASK:
            key = (line << w1) | byte
            key = (((key << w2 | column) << w2 | lines) << w2 | end_column) << w2 | size
            return (key << _WIDTH_BITS | w2) << _WIDTH_BITS | w1
    return (Pos(line, column, byte), Pos(end_line, end_column, end_byte))


def _fields(key: int) -> tuple[int, int, int, int, int, int]:
    """Return (line, column, byte, lines spanned, end column, bytes spanned) of a packed key."""
    w1 = key & _WIDTH_MASK
    key >>= _WIDTH_BITS
    w2 = key & _WIDTH_MASK
    key >>= _WIDTH_BITS
    m2 = (1 << w2) - 1
    size = key & m2
    key >>= w2
    end_column = key & m2
    key >>= w2
    lines = key & m2
    key >>= w2
    column = key & m2
    key >>= w2
    return key >> w1, column, key & ((1 << w1) - 1), lines, end_column, size


class Range:
    """A span of a source file. ``filename`` is relative to the root being built.

    Immutable, compared and hashed by value, as the frozen dataclass it replaces:
    ``Range(filename, start, end)`` with ``start`` and ``end`` as ``Pos``.
    """

    __slots__ = ("_key", "filename")

    filename: str
    _key: int | tuple[Pos, Pos]

    def __init__(self, filename: str, start: Pos, end: Pos) -> None:
        _set_filename(self, filename)
        _set_key(self, _key(start.line, start.column, start.byte, end.line, end.column, end.byte))

    @property
    def start(self) -> Pos:
        key = self._key
        if isinstance(key, tuple):
            return key[0]
        line, column, byte, _, _, _ = _fields(key)
        return Pos(line, column, byte)

    @property
    def end(self) -> Pos:
        key = self._key
        if isinstance(key, tuple):
            return key[1]
        line, _, byte, lines, end_column, size = _fields(key)
        return Pos(line + lines, end_column, byte + size)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Range:
            return NotImplemented
        assert isinstance(other, Range)
        return self._key == other._key and self.filename == other.filename

    def __hash__(self) -> int:
        return hash((self.filename, self._key))

    def __repr__(self) -> str:
        return f"Range(filename={self.filename!r}, start={self.start!r}, end={self.end!r})"

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return Range, (self.filename, self.start, self.end)

    def __copy__(self) -> Range:
        return self

    def __deepcopy__(self, memo: object) -> Range:
        return self

    def __str__(self) -> str:
        # HCL's form: file:L,C-C on one line, file:L,C-L,C across lines.
        start, end = self.start, self.end
        end_text = f"{end.column}" if end.line == start.line else f"{end.line},{end.column}"
        return f"{self.filename}:{start.line},{start.column}-{end_text}"

    @staticmethod
    def point(filename: str, line: int = 1, column: int = 1, byte: int = 0) -> Range:
        pos = Pos(line, column, byte)
        return Range(filename, pos, pos)

    @staticmethod
    def at(
        filename: str, line: int, column: int, byte: int, end_line: int, end_column: int, end_byte: int
    ) -> Range:
        """Return ``Range(filename, Pos(line, column, byte), Pos(end_line, end_column, end_byte))``,
        without building either ``Pos``: how readers and cache entries make ranges."""
        r = _new_range(Range)
        _set_filename(r, filename)
        _set_key(r, _key(line, column, byte, end_line, end_column, end_byte))
        return r


# The slots' own setters: Range.__setattr__ refuses every assignment.
_new_range = object.__new__
_set_filename = Range.__dict__["filename"].__set__
_set_key = Range.__dict__["_key"].__set__


def range_from_key(filename: str, key: int | tuple[Pos, Pos]) -> Range:
    """Return the range whose ``filename`` and ``_key`` these are: how caches pickle a range.

    Its arguments are the range's own objects, so the pickler's memo (which keeps every tuple of
    arguments it saw until the end) holds one small tuple a range, not six new ints.
    """
    r = _new_range(Range)
    _set_filename(r, filename)
    _set_key(r, key)
    return r


@dataclass(frozen=True, slots=True)
class Expr:
    """An argument's value in its Terraform JSON form, and where its source text was."""

    value: JsonValue
    range: Range


@dataclass(frozen=True, slots=True)
class Attribute:
    """``name = expr`` inside a body."""

    name: str
    expr: Expr
    name_range: Range

    @property
    def value(self) -> JsonValue:
        return self.expr.value


@dataclass(frozen=True, slots=True)
class Block:
    """A block: its type, labels and body.

    ``range`` is the definition range (type and labels, as Terraform's ``DefRange``);
    ``label_ranges`` has one range per label. ``origins`` lists the definition ranges of every
    block that contributed to this one when overrides were merged into it (empty when none).
    """

    type: str
    labels: tuple[str, ...]
    body: Body
    range: Range
    label_ranges: tuple[Range, ...] = ()
    origins: tuple[Range, ...] = ()

    @property
    def address(self) -> str:
        return ".".join((self.type, *self.labels))


@dataclass(frozen=True, slots=True)
class Body:
    """The attributes and nested blocks of a block, in source order.

    In JSON syntax, a property of a body whose schema is provider-defined (a resource body,
    a backend body, module inputs) cannot be told apart from a nested block without the
    provider's schema; such properties are attributes whose value is the JSON object or array.
    Emitting either form gives the same JSON.
    """

    items: tuple[Attribute | Block, ...] = ()
    range: Range | None = None

    def __eq__(self, other: object) -> bool:
        # By value, whatever the class: a body read from the module cache is a subclass that
        # decodes its items on first use (flatten.shell.build_cache.LazyBody).
        if not isinstance(other, Body):
            return NotImplemented
        return self.range == other.range and self.items == other.items

    @property
    def attributes(self) -> tuple[Attribute, ...]:
        return tuple(i for i in self.items if isinstance(i, Attribute))

    @property
    def blocks(self) -> tuple[Block, ...]:
        return tuple(i for i in self.items if isinstance(i, Block))

    def attribute(self, name: str) -> Attribute | None:
        """Return the last attribute called ``name`` (duplicates are diagnosed at load)."""
        found = None
        for item in self.items:
            if isinstance(item, Attribute) and item.name == name:
                found = item
        return found

    def blocks_of(self, type_: str) -> Iterator[Block]:
        return (i for i in self.items if isinstance(i, Block) and i.type == type_)


@dataclass(frozen=True, slots=True)
class ParsedFile:
    """One configuration file, loaded into the representation (no merging yet)."""

    filename: str
    syntax: str  # "native" or "json"
    body: Body
    is_override: bool = False


@dataclass(frozen=True, slots=True)
class Module:
    """One module directory after merging: its top-level blocks in a canonical order.

    ``directory`` is relative to the build root ("." for the root itself).
    """

    directory: str
    blocks: tuple[Block, ...] = ()
    files: tuple[str, ...] = ()

    def blocks_of(self, type_: str) -> Iterator[Block]:
        return (b for b in self.blocks if b.type == type_)


# -- fast construction of the frozen dataclasses above ---------------------------------------------
# A frozen slotted dataclass initialises each field through ``object.__setattr__`` (0.8 us for a
# Pos); setting the slots through their member descriptors gives the same object in a third of
# the time. Positions and ranges are most of what a parse or a cache entry holds (310,000 Pos and
# 155,000 Range objects for the 200-module benchmark tree). The fast reader (syntax/hcl_fast.py)
# and the module cache's unpickling (shell/build_cache.py) build through these. Valid because these
# classes have no ``__post_init__`` (tests/test_parse_cache.py checks the results are equal to
# constructed ones).
_new = object.__new__


def _setters(cls: type, *names: str) -> tuple[Callable[[object, object], None], ...]:
    return tuple(cls.__dict__[n].__set__ for n in names)


_POS_L, _POS_C, _POS_B = _setters(Pos, "line", "column", "byte")
_EXPR_V, _EXPR_R = _setters(Expr, "value", "range")
_ATTR_N, _ATTR_E, _ATTR_R = _setters(Attribute, "name", "expr", "name_range")
BLOCK_SETTERS = _setters(Block, "type", "labels", "body", "range", "label_ranges", "origins")
_BODY_I, BODY_SET_RANGE = _setters(Body, "items", "range")


def make_pos(line: int, column: int, byte: int) -> Pos:
    """Return ``Pos(line, column, byte)``, built about three times faster."""
    p = _new(Pos)
    _POS_L(p, line)
    _POS_C(p, column)
    _POS_B(p, byte)
    return p


def make_range(filename: str, start: Pos, end: Pos) -> Range:
    """Return ``Range(filename, start, end)``."""
    return Range(filename, start, end)


# ``Range.at``: a range and both its positions in one call, how cache entries store ranges (a
# quarter faster to load than three calls).
make_range_at = Range.at


def make_expr(value: object, range: Range) -> Expr:
    """Return ``Expr(value, range)``, built faster."""
    e = _new(Expr)
    _EXPR_V(e, value)
    _EXPR_R(e, range)
    return e


def make_attribute(name: str, expr: Expr, name_range: Range) -> Attribute:
    """Return ``Attribute(name, expr, name_range)``, built faster."""
    a = _new(Attribute)
    _ATTR_N(a, name)
    _ATTR_E(a, expr)
    _ATTR_R(a, name_range)
    return a


def make_block(*values: object) -> Block:
    """Return ``Block(type, labels, body, range, label_ranges, origins)`` (all six), built faster."""
    b = _new(Block)
    for setter, value in zip(BLOCK_SETTERS, values, strict=True):
        setter(b, value)
    return b


def make_body(items: tuple[Attribute | Block, ...], range: Range | None) -> Body:
    """Return ``Body(items, range)``, built faster."""
    b = _new(Body)
    _BODY_I(b, items)
    BODY_SET_RANGE(b, range)
    return b


# -- the same, from a range's filename and key: how cache entries store the model -------------------
# A cache entry is a pickle, and the pickler's memo (and the unpickler's) keeps every object it
# saved until the whole entry is done: a Range reduced on its own costs the range, its tuple of
# arguments and an opcode pair each, seven times for a variable block. Passing each owner's ranges
# as ``(filename, key)`` inside the owner's own arguments leaves one tuple per owner (the filename
# is one memoized string per file), a third of the objects alive while an entry is encoded or
# decoded (docs/reliability.md, "Memory").


def make_expr_at(value: object, filename: str, key: int | tuple[Pos, Pos]) -> Expr:
    """Return ``Expr(value, range_from_key(filename, key))``."""
    e = _new(Expr)
    _EXPR_V(e, value)
    _EXPR_R(e, range_from_key(filename, key))
    return e


def make_attribute_at(
    name: str, value: object, filename: str, name_key: int | tuple[Pos, Pos], key: int | tuple[Pos, Pos]
) -> Attribute:
    """Return ``Attribute(name, Expr(value, <range key>), <range name_key>)``, both ranges in ``filename``."""
    a = _new(Attribute)
    _ATTR_N(a, name)
    _ATTR_E(a, make_expr_at(value, filename, key))
    _ATTR_R(a, range_from_key(filename, name_key))
    return a


def make_body_at(items: tuple[Attribute | Block, ...], filename: str, key: int | tuple[Pos, Pos]) -> Body:
    """Return ``Body(items, range_from_key(filename, key))``."""
    b = _new(Body)
    _BODY_I(b, items)
    BODY_SET_RANGE(b, range_from_key(filename, key))
    return b


def make_block_at(
    type_: str,
    labels: tuple[str, ...],
    body: Body,
    filename: str,
    key: int | tuple[Pos, Pos],
    label_keys: tuple[int | tuple[Pos, Pos], ...],
    origins: tuple[Range, ...],
) -> Block:
    """Return ``make_block(type_, labels, body, <range key>, <ranges label_keys>, origins)``, every
    range in ``filename``."""
    return make_block(
        type_,
        labels,
        body,
        range_from_key(filename, key),
        tuple([range_from_key(filename, k) for k in label_keys]),
        origins,
    )


def range_args(*ranges: Range) -> tuple[str, tuple[int | tuple[Pos, Pos], ...]] | None:
    """Return the filename these ranges share and their keys, or None when they are not all in
    one file (the ``*_at`` constructors then do not apply)."""
    filename = ranges[0].filename
    for r in ranges:
        if r.filename != filename:
            return None
    return filename, tuple([r._key for r in ranges])
