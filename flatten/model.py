"""The one representation every stage shares: a module as Terraform's JSON syntax would state it.

Rule for the whole file: a value is stored in exactly the form Terraform's JSON configuration
syntax gives it at that position (spec §7), so native syntax is converted once, at load, and
everything after that (merge, wiring, emit) sees one kind of value. Every block, attribute and
expression keeps where it came from.

Absent is not null: an argument missing from a body means "not set"; an argument whose value is
``None`` means "set to null".
"""

from __future__ import annotations

from collections.abc import Iterator
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
]

# Numbers that are not integers are Decimals so that full precision survives (spec §7.1).
JsonValue: TypeAlias = Union[None, bool, int, Decimal, str, list["JsonValue"], dict[str, "JsonValue"]]  # noqa: UP007, RUF036


@dataclass(frozen=True, slots=True, order=True)
class Pos:
    """A position in a source file: 1-based line and column, 0-based byte offset."""

    line: int
    column: int
    byte: int


@dataclass(frozen=True, slots=True)
class Range:
    """A span of a source file. ``filename`` is relative to the root being built."""

    filename: str
    start: Pos
    end: Pos

    def __str__(self) -> str:
        # HCL's form: file:L,C-C on one line, file:L,C-L,C across lines.
        end = (
            f"{self.end.column}" if self.end.line == self.start.line else f"{self.end.line},{self.end.column}"
        )
        return f"{self.filename}:{self.start.line},{self.start.column}-{end}"

    @staticmethod
    def point(filename: str, line: int = 1, column: int = 1, byte: int = 0) -> Range:
        pos = Pos(line, column, byte)
        return Range(filename, pos, pos)


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
        # decodes its items on first use (flatten.build_cache.LazyBody).
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
