"""The one representation every stage shares: a module as Terraform's JSON syntax would state it.

Rule for the whole file: a value is stored in exactly the form Terraform's JSON configuration
syntax gives it at that position (spec §7), so native syntax is converted once, at load, and
everything after that (merge, wiring, emit) sees one kind of value. Every block, attribute and
expression keeps where it came from.

Absent is not null: an argument missing from a body means "not set"; an argument whose value is
``None`` means "set to null".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import Field, FrozenInstanceError, dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Any, ClassVar, TypeAlias, Union

__all__ = [
    "REDUCERS",
    "Attribute",
    "Block",
    "Body",
    "Call",
    "Expr",
    "JsonValue",
    "Key",
    "Module",
    "ParsedFile",
    "Pos",
    "Range",
    "Reference",
    "Scanned",
    "Step",
    "Stored",
    "json_strings",
    "make_attribute",
    "make_attribute_at",
    "make_block",
    "make_block_at",
    "make_body",
    "make_body_at",
    "make_call",
    "make_expr",
    "make_expr_at",
    "make_pos",
    "make_range",
    "make_range_at",
    "make_reference",
    "module_address",
    "range_from_key",
    "range_key",
    "set_body_at",
    "set_body_range",
    "stored_block",
    "stored_body",
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
    # An "or" of ints is negative when one of them is: one test for the six signs (the fast
    # reader makes a key per name, label, value and body).
    if w1 <= _WIDTH_MASK and w2 <= _WIDTH_MASK and (line | byte | column | lines | end_column | size) >= 0:
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


# An attribute's name range is kept inside its expression's key when both are packed: the name's
# start relative to the expression's (lines and bytes before it), its column and its extent, in
# six fields of ``w`` bits and ``w`` itself, below the expression's key. One int of about 110 bits
# (40 bytes) instead of two of 36: most of a module's ranges are its arguments' two.
_NAME_FIELDS = 6
_NAME_MAX_WIDTH = 20


def _pair(name_key: int, key: int) -> int | None:
    """Return the one int that holds ``name_key`` and ``key`` (None when the name does not start
    before the expression or is too far from it)."""
    line, column, byte, lines, end_column, size = _fields(name_key)
    expr_line, _, expr_byte, _, _, _ = _fields(key)
    up, back = expr_line - line, expr_byte - byte
    if up < 0 or back < 0:
        return None
    w = (up | column | back | lines | end_column | size).bit_length()
    if w > _NAME_MAX_WIDTH:
        return None
    rel = (((((up << w | column) << w | back) << w | lines) << w | end_column) << w | size) << _WIDTH_BITS | w
    return key << (_NAME_FIELDS * w + _WIDTH_BITS) | rel


def _unpair(pair: int) -> tuple[int, int]:
    """Return the name's key and the expression's key that ``_pair`` packed into ``pair``."""
    w = pair & _WIDTH_MASK
    key = pair >> (_NAME_FIELDS * w + _WIDTH_BITS)
    rel = pair >> _WIDTH_BITS
    m = (1 << w) - 1
    size = rel & m
    rel >>= w
    end_column = rel & m
    rel >>= w
    lines = rel & m
    rel >>= w
    back = rel & m
    rel >>= w
    column = rel & m
    up = (rel >> w) & m
    expr_line, _, expr_byte, _, _, _ = _fields(key)
    line, byte = expr_line - up, expr_byte - back
    name_key = _key(line, column, byte, line + lines, end_column, byte + size)
    assert isinstance(name_key, int)
    return name_key, key


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


# -- the owners of ranges ------------------------------------------------------------------------
# Expr, Attribute, Block and Body are frozen dataclasses to every caller (``fields``,
# ``replace``, equality, hash, repr and pickling as the dataclass declarations in
# ``_*Fields`` below give them), but none of them holds a Range object: each keeps its file once
# and each range as the range's packed key (an int), and builds the Range when it is read. A
# range that has no int key, or (for a label or an attribute's name) lies in another file than
# its owner's, is kept as the Range itself. A variable block held seven Range objects (48 bytes
# each) and a tuple of label ranges besides its keys (docs/reliability.md, "Memory").
# Equality compares what is stored: a range is stored in exactly one way, so equal stored
# forms are equal ranges and the other way round.

Stored: TypeAlias = Union[int, Range]  # noqa: UP007


def _stored(filename: str, r: Range) -> Stored:
    """How an owner in ``filename`` keeps ``r``."""
    key = r._key
    return key if key.__class__ is int and r.filename == filename else r


def _loaded(filename: str, stored: Stored) -> Range:
    return range_from_key(filename, stored) if isinstance(stored, int) else stored


def _from_key(filename: str, key: int | tuple[Pos, Pos] | Range) -> Stored:
    """How an owner in ``filename`` keeps the range whose key (or stored form) ``key`` is."""
    if isinstance(key, int):
        return key
    if isinstance(key, Range):
        return _stored(filename, key)
    return range_from_key(filename, key)


def _dataclass_fields(shadow: type) -> Callable[[type], type]:
    """Give the decorated class the fields of ``shadow`` (a dataclass declaring the public fields),
    so that ``dataclasses.fields`` and ``dataclasses.replace`` treat it as that dataclass."""

    def decorate(cls: type) -> type:
        for name in ("__dataclass_fields__", "__dataclass_params__"):
            setattr(cls, name, getattr(shadow, name))
        return cls

    return decorate


class _Frozen:
    __slots__ = ()
    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]  # set by _dataclass_fields

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")


@dataclass(frozen=True)
class _ExprFields:
    value: JsonValue
    range: Range


@_dataclass_fields(_ExprFields)
class Expr(_Frozen):
    """An argument's value in its Terraform JSON form, and where its source text was."""

    __slots__ = ("_file", "_key", "value")
    __match_args__ = ("value", "range")

    value: JsonValue
    _file: str
    _key: Stored

    def __init__(self, value: JsonValue, range: Range) -> None:
        _EXPR_V(self, value)
        _EXPR_F(self, range.filename)
        _EXPR_K(self, _stored(range.filename, range))

    @property
    def range(self) -> Range:
        return _loaded(self._file, self._key)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Expr:
            return NotImplemented
        assert isinstance(other, Expr)
        return self._key == other._key and self._file == other._file and self.value == other.value

    def __hash__(self) -> int:
        return hash((self.value, self.range))

    def __repr__(self) -> str:
        return f"Expr(value={self.value!r}, range={self.range!r})"

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return Expr, (self.value, self.range)


@dataclass(frozen=True)
class _AttributeFields:
    name: str
    expr: Expr
    name_range: Range


@_dataclass_fields(_AttributeFields)
class Attribute(_Frozen):
    """``name = expr`` inside a body.

    It holds its expression's value, file and range key itself, and builds the ``Expr`` when
    ``expr`` is read (an equal one each time): one object an argument instead of two.
    """

    __slots__ = ("_file", "_key", "_name_at", "name", "value")
    __match_args__ = ("name", "expr", "name_range")

    name: str
    value: JsonValue  # the expression's value
    _file: str  # the expression's file
    _key: Stored  # the expression's range (with the name's when ``_name_at`` is None: ``_pair``)
    _name_at: Stored | None  # the name's range, in the expression's file

    def __init__(self, name: str, expr: Expr, name_range: Range) -> None:
        _init_attribute(self, name, expr, name_range)

    @property
    def expr(self) -> Expr:
        e = _new(Expr)
        _EXPR_V(e, self.value)
        _EXPR_F(e, self._file)
        key = self._key
        if self._name_at is None:  # the name's range is packed with the expression's
            assert isinstance(key, int)
            key = key >> (_NAME_FIELDS * (key & _WIDTH_MASK) + _WIDTH_BITS)
        _EXPR_K(e, key)
        return e

    @property
    def name_range(self) -> Range:
        if self._name_at is None:
            assert isinstance(self._key, int)
            return range_from_key(self._file, _unpair(self._key)[0])
        return _loaded(self._file, self._name_at)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Attribute:
            return NotImplemented
        assert isinstance(other, Attribute)
        return (
            self.name == other.name
            and self._key == other._key
            and self._name_at == other._name_at
            and self._file == other._file
            and self.value == other.value
        )

    def __hash__(self) -> int:
        return hash((self.name, self.expr, self.name_range))

    def __repr__(self) -> str:
        return f"Attribute(name={self.name!r}, expr={self.expr!r}, name_range={self.name_range!r})"

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return Attribute, (self.name, self.expr, self.name_range)


@dataclass(frozen=True)
class _BlockFields:
    type: str
    labels: tuple[str, ...]
    body: Body
    range: Range
    label_ranges: tuple[Range, ...] = ()
    origins: tuple[Range, ...] = ()


@_dataclass_fields(_BlockFields)
class Block(_Frozen):
    """A block: its type, labels and body.

    ``range`` is the definition range (type and labels, as Terraform's ``DefRange``);
    ``label_ranges`` has one range per label. ``origins`` lists the definition ranges of every
    block that contributed to this one when overrides were merged into it (empty when none).
    """

    __slots__ = ("_file", "_key", "_labels_at", "body", "labels", "origins", "type")
    __match_args__ = ("type", "labels", "body", "range", "label_ranges", "origins")

    type: str
    labels: tuple[str, ...]
    body: Body
    origins: tuple[Range, ...]
    _file: str
    _key: Stored
    _labels_at: Stored | tuple[Stored, ...]  # one label's range alone, else a tuple

    def __init__(
        self,
        type: str,
        labels: tuple[str, ...],
        body: Body,
        range: Range,
        label_ranges: tuple[Range, ...] = (),
        origins: tuple[Range, ...] = (),
    ) -> None:
        _init_block(self, type, labels, body, range, label_ranges, origins)

    @property
    def range(self) -> Range:
        return _loaded(self._file, self._key)

    @property
    def label_ranges(self) -> tuple[Range, ...]:
        at = self._labels_at
        if isinstance(at, tuple):
            filename = self._file
            return tuple([_loaded(filename, s) for s in at])
        return (_loaded(self._file, at),)

    @property
    def address(self) -> str:
        return ".".join((self.type, *self.labels))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Block:
            return NotImplemented
        assert isinstance(other, Block)
        return (
            self.type == other.type
            and self._key == other._key
            and self.labels == other.labels
            and self._file == other._file
            and self._labels_at == other._labels_at
            and self.origins == other.origins
            and self.body == other.body
        )

    def __hash__(self) -> int:
        return hash((self.type, self.labels, self.body, self.range, self.label_ranges, self.origins))

    def __repr__(self) -> str:
        return (
            f"Block(type={self.type!r}, labels={self.labels!r}, body={self.body!r}, range={self.range!r}, "
            f"label_ranges={self.label_ranges!r}, origins={self.origins!r})"
        )

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return Block, (self.type, self.labels, self.body, self.range, self.label_ranges, self.origins)


@dataclass(frozen=True)
class _BodyFields:
    items: tuple[Attribute | Block, ...] = ()
    range: Range | None = None


@_dataclass_fields(_BodyFields)
class Body(_Frozen):
    """The attributes and nested blocks of a block, in source order.

    In JSON syntax, a property of a body whose schema is provider-defined (a resource body,
    a backend body, module inputs) cannot be told apart from a nested block without the
    provider's schema; such properties are attributes whose value is the JSON object or array.
    Emitting either form gives the same JSON.
    """

    __slots__ = ("_file", "_key", "items")
    __match_args__ = ("items", "range")

    items: tuple[Attribute | Block, ...]
    _file: str | None
    _key: Stored | None

    def __init__(self, items: tuple[Attribute | Block, ...] = (), range: Range | None = None) -> None:
        _BODY_I(self, items)
        set_body_range(self, range)

    @property
    def range(self) -> Range | None:
        key = self._key
        if key is None:
            return None
        assert self._file is not None
        return _loaded(self._file, key)

    def __eq__(self, other: object) -> bool:
        # By value, whatever the class: a body read from the module cache is a subclass that
        # decodes its items on first use (flatten.shell.build_cache.LazyBody).
        if not isinstance(other, Body):
            return NotImplemented
        return self._key == other._key and self._file == other._file and self.items == other.items

    def __hash__(self) -> int:
        return hash((self.items, self.range))

    def __repr__(self) -> str:
        return f"Body(items={self.items!r}, range={self.range!r})"

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return Body, (self.items, self.range)

    def peek_items(self) -> tuple[Attribute | Block, ...]:
        """Return ``items`` without keeping anything reading them made.

        The same tuple as ``items`` here; a body read from the module cache
        (flatten.shell.build_cache.LazyBody) decodes its stored items for this call only. For a
        reader of every body once (emitting), which would otherwise leave the whole module decoded
        beside its output (docs/reliability.md, "Memory").
        """
        return self.items

    def peek(self) -> Body:
        """Return this body as one whose reading keeps nothing decoded here (see ``peek_items``).

        This body itself; a body read from the module cache returns a plain copy of its decoded
        items, which the caller drops when done. For a stage that walks every top-level block once
        (the reference checks), so that the walk does not leave the whole module decoded.
        """
        return self

    def item_names(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Return the names of the attributes and the types of the blocks (order and repeats not
        significant: a body read from the module cache gives each once, sorted).

        A body read from the module cache answers from the names it stored, without decoding its
        items: a check that only needs the names leaves a warm build's bodies undecoded.
        """
        items = self.items
        return (
            tuple([i.name for i in items if isinstance(i, Attribute)]),
            tuple([i.type for i in items if isinstance(i, Block)]),
        )

    @property
    def attributes(self) -> tuple[Attribute, ...]:
        # A list built first: tuple(generator) costs half as much again, and every check reads these.
        return tuple([i for i in self.items if isinstance(i, Attribute)])

    @property
    def blocks(self) -> tuple[Block, ...]:
        return tuple([i for i in self.items if isinstance(i, Block)])

    def attribute(self, name: str) -> Attribute | None:
        """Return the last attribute called ``name`` (duplicates are diagnosed at load)."""
        found = None
        for item in self.items:
            if isinstance(item, Attribute) and item.name == name:
                found = item
        return found

    def blocks_of(self, type_: str) -> Iterator[Block]:
        return (i for i in self.items if isinstance(i, Block) and i.type == type_)

    def has_attribute(self, name: str) -> bool:
        """Whether the body sets ``name``; a body from the module cache answers without decoding."""
        return self.attribute(name) is not None


def json_strings(value: JsonValue, *, items_last_first: bool = False) -> Iterator[str]:
    """Every string of a JSON value, object keys included, each key just before its value: in an
    expression, each is a template that may refer to something.

    The order is the document's, or with ``items_last_first`` an object's items from the last to
    the first (each key still before its value; lists stay in order): the order in which some
    checks have always reported, kept so that their diagnostics keep their order.

    >>> list(json_strings({"a": ["x", "y"], "b": "z"}))
    ['a', 'x', 'y', 'b', 'z']
    >>> list(json_strings({"a": ["x", "y"], "b": "z"}, items_last_first=True))
    ['b', 'z', 'a', 'x', 'y']
    """
    stack: list[JsonValue] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            for key, val in item.items() if items_last_first else reversed(item.items()):
                stack.append(val)
                stack.append(key)


def module_address(path: Sequence[str]) -> str:
    """Return the module address for a path of call names: ``module.a.module.b`` ("" for the root)."""
    return "module." + ".module.".join(path) if path else ""


@dataclass(frozen=True, slots=True)
class ParsedFile:
    """One configuration file, loaded into the representation (no merging yet)."""

    filename: str
    syntax: str  # "native" or "json"
    body: Body
    is_override: bool = False


Step: TypeAlias = tuple[str, "str | int"]  # ("attr", name) or ("index", key)


@dataclass(frozen=True, slots=True)
class Reference:
    """A reference in an expression's text: ``root`` then static ``steps``, spanning
    ``text[start:end]`` (found by syntax/references.py, the one reference scanner).

    ``ends[k]`` is the offset just after the root (k = 0) or after step k.
    """

    root: str
    steps: tuple[Step, ...]
    start: int
    end: int
    ends: tuple[int, ...]

    def name(self, k: int) -> str | None:
        """Return step ``k`` (1-based) as a name: an attribute or a string index; None otherwise."""
        if k > len(self.steps):
            return None
        value = self.steps[k - 1][1]
        return value if isinstance(value, str) else None

    def tail(self, text: str, k: int) -> str:
        """Return the source of the steps after the first ``k`` (``k = 0``: everything after the root)."""
        return text[self.ends[k] : self.end]


@dataclass(frozen=True, slots=True)
class Call:
    """A function call: its name as written (``length``, ``core::length``,
    ``provider::aws::arn_parse``), spanning ``text[start:end]``, and where its ``(`` is."""

    name: str
    start: int
    end: int
    paren: int


#: One template's scan: its references and function calls in source order, or None when the
#: text is no readable template (its syntax error is the reader's to report).
Scanned: TypeAlias = "tuple[tuple[Reference, ...], tuple[Call, ...]] | None"


@dataclass(frozen=True, slots=True)
class Module:
    """One module directory after merging: its top-level blocks in a canonical order.

    ``directory`` is relative to the build root ("." for the root itself). ``scans``: the scan
    record, each template of the module (and each bare traversal item of a ``depends_on``,
    ``replace_triggered_by`` or ``providers`` argument, as ``${ITEM}``) scanned once where the
    module is loaded (syntax/references.py ``scan_module``), so that every check reads the same
    scan and none reads the text again; cached with the module (docs/performance.md, "Scan
    once"). Not part of the module's value: two modules with equal blocks are equal.
    """

    directory: str
    blocks: tuple[Block, ...] = ()
    files: tuple[str, ...] = ()
    scans: dict[str, Scanned] = field(default_factory=dict, compare=False, repr=False)

    def blocks_of(self, type_: str) -> Iterator[Block]:
        return (b for b in self.blocks if b.type == type_)


# -- fast construction ---------------------------------------------------------------------------
# A frozen slotted class is initialised here through its slots' member descriptors: the fast
# reader (syntax/hcl_fast.py) and the caches' unpickling (shell/build_cache.py) build through
# these (tests/shell/test_parse_cache.py checks the results are equal to constructed ones).
_new = object.__new__


def _setters(cls: type, *names: str) -> tuple[Callable[[object, object], None], ...]:
    return tuple(cls.__dict__[n].__set__ for n in names)


_POS_L, _POS_C, _POS_B = _setters(Pos, "line", "column", "byte")
_REF_R, _REF_S, _REF_B, _REF_E, _REF_N = _setters(Reference, "root", "steps", "start", "end", "ends")
_CALL_N, _CALL_B, _CALL_E, _CALL_P = _setters(Call, "name", "start", "end", "paren")
_EXPR_V, _EXPR_F, _EXPR_K = _setters(Expr, "value", "_file", "_key")
_ATTR_N, _ATTR_V, _ATTR_F, _ATTR_K, _ATTR_A = _setters(
    Attribute, "name", "value", "_file", "_key", "_name_at"
)
_BLOCK_T, _BLOCK_L, _BLOCK_B, _BLOCK_F, _BLOCK_K, _BLOCK_LA, _BLOCK_O = _setters(
    Block, "type", "labels", "body", "_file", "_key", "_labels_at", "origins"
)
_BODY_I, _BODY_F, _BODY_K = _setters(Body, "items", "_file", "_key")


def _init_block(
    b: Block,
    type_: str,
    labels: tuple[str, ...],
    body: Body,
    range: Range,
    label_ranges: tuple[Range, ...],
    origins: tuple[Range, ...],
) -> None:
    filename = range.filename
    _BLOCK_T(b, type_)
    _BLOCK_L(b, labels)
    _BLOCK_B(b, body)
    _BLOCK_F(b, filename)
    _BLOCK_K(b, _stored(filename, range))
    if len(label_ranges) == 1:
        _BLOCK_LA(b, _stored(filename, label_ranges[0]))
    else:
        _BLOCK_LA(b, tuple([_stored(filename, r) for r in label_ranges]))
    _BLOCK_O(b, origins)


def set_body_range(body: Body, range: Range | None) -> None:
    """Set the range of a body being built (``Body.__init__``, the module cache's lazy bodies)."""
    if range is None:
        _BODY_F(body, None)
        _BODY_K(body, None)
    else:
        _BODY_F(body, range.filename)
        _BODY_K(body, _stored(range.filename, range))


def make_reference(
    root: str, steps: tuple[Step, ...], start: int, end: int, ends: tuple[int, ...]
) -> Reference:
    """Return ``Reference(root, steps, start, end, ends)`` through its slots: a module's scan record
    (``Module.scans``) holds one per reference and travels with the module (``REDUCERS``)."""
    r = _new(Reference)
    _REF_R(r, root)
    _REF_S(r, steps)
    _REF_B(r, start)
    _REF_E(r, end)
    _REF_N(r, ends)
    return r


def make_call(name: str, start: int, end: int, paren: int) -> Call:
    """Return ``Call(name, start, end, paren)`` through its slots (``make_reference``)."""
    c = _new(Call)
    _CALL_N(c, name)
    _CALL_B(c, start)
    _CALL_E(c, end)
    _CALL_P(c, paren)
    return c


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


# ``Range.at``: a range and both its positions in one call.
make_range_at = Range.at
range_key = _key


def make_expr(value: object, range: Range) -> Expr:
    """Return ``Expr(value, range)``, built faster."""
    e = _new(Expr)
    _EXPR_V(e, value)
    _EXPR_F(e, range.filename)
    _EXPR_K(e, _stored(range.filename, range))
    return e


def _init_attribute(a: Attribute, name: str, expr: Expr, name_range: Range) -> None:
    filename = expr._file
    _ATTR_N(a, name)
    _ATTR_V(a, expr.value)
    _ATTR_F(a, filename)
    _attribute_ranges(a, expr._key, _stored(filename, name_range))


def _attribute_ranges(a: Attribute, key: Stored, name_at: Stored) -> None:
    if isinstance(key, int) and isinstance(name_at, int):
        pair = _pair(name_at, key)
        if pair is not None:
            _ATTR_K(a, pair)
            _ATTR_A(a, None)
            return
    _ATTR_K(a, key)
    _ATTR_A(a, name_at)


def make_attribute(name: str, expr: Expr, name_range: Range) -> Attribute:
    """Return ``Attribute(name, expr, name_range)``, built faster."""
    a = _new(Attribute)
    _init_attribute(a, name, expr, name_range)
    return a


def make_block(
    type_: str,
    labels: tuple[str, ...],
    body: Body,
    range: Range,
    label_ranges: tuple[Range, ...] = (),
    origins: tuple[Range, ...] = (),
) -> Block:
    """Return ``Block(type_, labels, body, range, label_ranges, origins)``, built faster."""
    b = _new(Block)
    _init_block(b, type_, labels, body, range, label_ranges, origins)
    return b


def make_body(items: tuple[Attribute | Block, ...], range: Range | None) -> Body:
    """Return ``Body(items, range)``, built faster."""
    b = _new(Body)
    _BODY_I(b, items)
    set_body_range(b, range)
    return b


# -- the same, from each range's key: how the fast reader and cache entries build the model ------
# ``key`` is a range's key (``range_key``) or what an owner stores of it (``Stored``). A cache entry
# is a pickle, and the pickler's memo (and the unpickler's) keeps every object it saved until the
# whole entry is done: each owner is saved as one call whose arguments are its own stored fields
# (``REDUCERS``), so no Range, nor a tuple of arguments per range, is made to save or load it.

Key: TypeAlias = Union[int, Range, tuple[Pos, Pos]]  # noqa: UP007


def make_expr_at(value: object, filename: str, key: Key) -> Expr:
    """Return ``Expr(value, <the range of key in filename>)``."""
    e = _new(Expr)
    _EXPR_V(e, value)
    _EXPR_F(e, filename)
    _EXPR_K(e, _from_key(filename, key))
    return e


def make_attribute_at(name: str, value: object, filename: str, name_key: Key | None, key: Key) -> Attribute:
    """Return ``Attribute(name, Expr(value, <range key>), <range name_key>)``, both keys in ``filename``."""
    a = _new(Attribute)
    _ATTR_N(a, name)
    _ATTR_V(a, value)
    _ATTR_F(a, filename)
    if name_key is None:  # ``key`` is an attribute's stored pair (``REDUCERS``)
        _ATTR_K(a, key)
        _ATTR_A(a, None)
    else:
        _attribute_ranges(a, _from_key(filename, key), _from_key(filename, name_key))
    return a


def make_attribute_on_line(
    name: str,
    value: object,
    filename: str,
    line: int,
    column: int,
    byte: int,
    name_end_byte: int,
    start_byte: int,
    end_line: int,
    end_column: int,
    end_byte: int,
) -> Attribute:
    """Return ``make_attribute_at`` of a name on ``line`` (from ``column``/``byte`` to
    ``name_end_byte``) and an expression starting on the same line at ``start_byte``: the same
    object, with the keys and their pair (``_pair``) packed from the numbers, not unpacked again
    (the fast reader makes one per attribute)."""
    name_end_column = column + (name_end_byte - byte)
    start_column = column + (start_byte - byte)
    key = _key(line, start_column, start_byte, end_line, end_column, end_byte)
    back = start_byte - byte
    size = name_end_byte - byte  # the name's fields, as _pair packs them (up and lines are 0)
    # The name's own key is not made here: it packs (``_key``) when its numbers are not negative
    # and fit 63 bits, which the expression's key (its line, a byte at or after the name's) and
    # ``w`` below vouch for: one ``_key`` per attribute instead of two.
    if isinstance(key, int) and back >= 0 and (column | byte | name_end_column | size) >= 0:
        w = (column | back | name_end_column | size).bit_length()
        if w <= _NAME_MAX_WIDTH:
            a = _new(Attribute)
            _ATTR_N(a, name)
            _ATTR_V(a, value)
            _ATTR_F(a, filename)
            rel = (((column << w | back) << 2 * w | name_end_column) << w | size) << _WIDTH_BITS | w
            _ATTR_K(a, key << (_NAME_FIELDS * w + _WIDTH_BITS) | rel)
            _ATTR_A(a, None)
            return a
    name_key = _key(line, column, byte, line, name_end_column, name_end_byte)
    return make_attribute_at(name, value, filename, name_key, key)


def make_body_at(items: tuple[Attribute | Block, ...], filename: str | None, key: Key | None) -> Body:
    """Return ``Body(items, <range key in filename>)`` (no range when ``key`` is None)."""
    b = _new(Body)
    _BODY_I(b, items)
    set_body_at(b, filename, key)
    return b


def set_body_at(body: Body, filename: str | None, key: Key | None) -> None:
    """Set the range of a body being built from its key in ``filename`` (None: no range)."""
    if key is None or filename is None:
        _BODY_F(body, None)
        _BODY_K(body, None)
    else:
        _BODY_F(body, filename)
        _BODY_K(body, _from_key(filename, key))


def make_block_at(
    type_: str,
    labels: tuple[str, ...],
    body: Body,
    filename: str,
    key: Key,
    label_keys: Key | tuple[Key, ...],
    origins: tuple[Range, ...],
) -> Block:
    """Return ``Block(type_, labels, body, <range key>, <ranges label_keys>, origins)``, every key in
    ``filename``; ``label_keys`` is one label's key alone, else a tuple of keys."""
    b = _new(Block)
    _BLOCK_T(b, type_)
    _BLOCK_L(b, labels)
    _BLOCK_B(b, body)
    _BLOCK_F(b, filename)
    _BLOCK_K(b, _from_key(filename, key))
    if isinstance(label_keys, tuple) and not (label_keys and isinstance(label_keys[0], Pos)):
        if len(label_keys) == 1:  # one label's range is kept alone (_init_block)
            _BLOCK_LA(b, _from_key(filename, label_keys[0]))
        else:
            _BLOCK_LA(b, tuple([_from_key(filename, k) for k in label_keys]))
    else:
        _BLOCK_LA(b, _from_key(filename, label_keys))
    _BLOCK_O(b, origins)
    return b


def stored_block(b: Block) -> tuple[str, Stored, Stored | tuple[Stored, ...]]:
    """Return a block's file and stored ranges (its own, its labels'): ``make_block_at``'s arguments."""
    return b._file, b._key, b._labels_at


def stored_body(b: Body) -> tuple[str | None, Stored | None]:
    """Return a body's file and stored range: ``make_body_at``'s arguments."""
    return b._file, b._key


REDUCERS: Mapping[type, Callable[[Any], tuple[object, tuple[object, ...]]]] = MappingProxyType(
    {
        Expr: lambda e: (make_expr_at, (e.value, e._file, e._key)),
        Attribute: lambda a: (make_attribute_at, (a.name, a.value, a._file, a._name_at, a._key)),
        Block: lambda b: (
            make_block_at,
            (b.type, b.labels, b.body, b._file, b._key, b._labels_at, b.origins),
        ),
        Body: lambda b: (make_body_at, (b.items, b._file, b._key)),
        # A scan record's entries: without these each was pickled through the dataclass's
        # Python-level __getstate__/__setstate__, 0.1 s of flat 200's cold build (issue 41).
        Reference: lambda r: (make_reference, (r.root, r.steps, r.start, r.end, r.ends)),
        Call: lambda c: (make_call, (c.name, c.start, c.end, c.paren)),
    }
)
