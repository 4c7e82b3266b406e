"""Every top-level block type, with every rule about it, in one table (``BLOCKS``).

One row per block type says: its labels, which dialects have it (a ``FEATURES`` row of
``flatten/lang/dialect.py``), its schema (``flatten/lang/fields.py``), which per-file decode
check runs on it, how merge appends it from a primary file and applies it from an override file,
and how emit writes it. The stages keep their handlers but look them up here by the name a row
states: ``decode.py`` runs ``_Checker.block_<check>``, ``merge.py`` runs
``_Merger._append_<append>`` and ``_Merger._merge_<merge>``; each builds its table from ``BLOCKS``
at import, so a row naming a handler that does not exist fails at import, not in a user's build.
A new block type is one row here (plus its handlers).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import Enum
from types import MappingProxyType

from flatten.lang import fields
from flatten.lang.dialect import Dialect
from flatten.lang.fields import BlockSchema

__all__ = ["BLOCKS", "BlockType", "Emit", "by_name", "emit_form", "top_schema"]


class Emit(Enum):
    """How emit.py writes the blocks of one type (keys of the document are always sorted)."""

    # Labelled: nested objects by label; unlabelled: one object, or a list when it repeats.
    DEFAULT = "default"
    # One object holding every entry of every block (locals: each name is declared once).
    MERGED = "merged"
    # A list in source order even for one block: the order has meaning (moved chains, imports).
    LIST = "list"


@dataclass(frozen=True, slots=True)
class BlockType:
    """One top-level block type and every rule flatten applies to it."""

    name: str
    labels: tuple[str, ...]
    schema: Callable[[Dialect], BlockSchema]  # its arguments and nested blocks (fields.py)
    feature: str | None = None  # the FEATURES row a dialect must allow; None: both engines have it
    check: str | None = None  # decode.py: _Checker.block_<check> (per-file decode checks)
    append: str | None = None  # merge.py: _Merger._append_<append> (primary files, spec §2)
    merge: str | None = None  # merge.py: _Merger._merge_<merge> (override files, spec §3)
    emit: Emit = Emit.DEFAULT

    def allowed(self, dialect: Dialect) -> bool:
        return self.feature is None or dialect.allows(self.feature)


# In the order the engines' schemas list them. "terraform" has no merge row: merge.py applies
# all terraform blocks of an override file together, first (spec §3.2).
BLOCKS: tuple[BlockType, ...] = (
    BlockType("terraform", (), fields.terraform_schema, check="terraform", append="terraform"),
    BlockType("required_providers", (), fields.required_providers_schema, check="required_providers"),
    BlockType(
        "provider", ("name",), fields.provider_schema, check="provider", append="provider", merge="provider"
    ),
    BlockType(
        "variable", ("name",), fields.variable_schema, check="variable", append="variable", merge="variable"
    ),
    BlockType(
        "locals", (), fields.locals_schema, check="locals", append="locals", merge="locals", emit=Emit.MERGED
    ),
    BlockType("output", ("name",), fields.output_schema, check="output", append="output", merge="output"),
    BlockType("module", ("name",), fields.module_schema, check="module", append="module", merge="module"),
    BlockType(
        "resource",
        ("type", "name"),
        fields.resource_schema,
        check="resource",
        append="resource",
        merge="resource",
    ),
    BlockType(
        "data", ("type", "name"), fields.data_schema, check="data", append="resource", merge="resource"
    ),
    BlockType(
        "ephemeral",
        ("type", "name"),
        fields.ephemeral_schema,
        check="ephemeral",
        append="resource",
        merge="resource",
    ),
    BlockType("moved", (), fields.moved_schema, check="moved", merge="cannot", emit=Emit.LIST),
    BlockType(
        "import", (), fields.import_schema, check="import", append="import", merge="cannot", emit=Emit.LIST
    ),
    BlockType("removed", (), fields.removed_schema, check="removed", merge="cannot", emit=Emit.LIST),
    BlockType("check", ("name",), fields.check_schema, check="check", append="check", merge="cannot"),
    BlockType(
        "language", (), fields.language_schema, feature="language_block", check="language", merge="cannot"
    ),
    BlockType(
        "action",
        ("type", "name"),
        fields.action_schema,
        feature="actions",
        append="resource",
        merge="resource",
    ),
)

_BY_NAME: Mapping[str, BlockType] = MappingProxyType({b.name: b for b in BLOCKS})


def by_name(name: str) -> BlockType | None:
    """Return the row of block type ``name``, or None for a type no engine has."""
    return _BY_NAME.get(name)


def emit_form(name: str) -> Emit:
    """Return how emit.py writes blocks of type ``name``."""
    row = _BY_NAME.get(name)
    return row.emit if row is not None else Emit.DEFAULT


def _top_schema(dialect: Dialect) -> BlockSchema:
    return BlockSchema(
        blocks={b.name: replace(b.schema(dialect), labels=b.labels) for b in BLOCKS if b.allowed(dialect)}
    )


# Built once: every file of every build is read against one of these.
_TOP: Mapping[Dialect, BlockSchema] = MappingProxyType({d: _top_schema(d) for d in Dialect})


def top_schema(dialect: Dialect) -> BlockSchema:
    """Return the schema of a configuration file's top level for ``dialect`` (spec §1)."""
    return _TOP[dialect]
