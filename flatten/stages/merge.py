"""Assemble one module from its files: duplicate declarations, then override files, block by block.

The rule every function here follows (OpenTofu's ``module_merge.go``): whatever an override file
sets explicitly wins, and whatever it omits stays. Primary files are appended in order and
duplicate declarations are diagnosed (spec §2); override files are then applied one at a time,
in the order given, each into the result so far (spec §3.0). Per block type:

* body arguments replace by name, and a nested block type present in the override replaces every
  base block of that type; ``dynamic "T"`` counts as type ``T`` (spec §3.1);
* ``terraform``: ``required_providers`` entries replace element-wise, ``backend``/``cloud``
  replace whole and clear each other, ``provider_meta`` and ``experiments`` are ignored (§3.2);
* ``provider``, ``variable``, ``locals``, ``output``, ``module``, ``resource``/``data``/
  ``ephemeral`` follow §3.3–§3.8, with the errors of §3.9–§3.10;
* after merging, the pitfalls of §3.11 are resolved so that the emitted JSON loads back the same:
  ``count`` wins over ``for_each`` (with a warning), ``ignore_changes = all`` wins over a list,
  and fields Terraform drops (``replace_triggered_by`` in an override, …) are never carried.

Nothing is mutated: every changed block is a new value built with ``dataclasses.replace``, and a
block that overrides merged into records every contributing definition in ``Block.origins``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from types import MappingProxyType

from flatten.lang.blocks import BLOCKS
from flatten.lang.diagnostics import Diagnostic, Diagnostics, Severity
from flatten.lang.model import Attribute, Block, Body, Expr, JsonValue, Module, ParsedFile, Range
from flatten.lang.options import Options
from flatten.lang.types import (
    AnyType,
    ConversionError,
    DefaultsMismatch,
    ListType,
    MapType,
    ObjectType,
    SetType,
    TupleType,
    Type,
    TypeExprError,
    apply_defaults,
    convert,
    has_collection,
    parse_type,
    type_expression,
    with_defaults_of,
)
from flatten.stages.decode import range_within

__all__ = ["kept_by_merge", "merge_module"]

Item = Attribute | Block

# Spec §3.8, §3.7, §3.3: the arguments and blocks that are not part of the mergeable body.
_RESOURCE_META_ATTRS = frozenset({"count", "for_each", "provider", "depends_on"})
_MODULE_META_ATTRS = frozenset({"source", "version", "count", "for_each", "depends_on", "providers"})
_PROVIDER_META_ATTRS = frozenset({"alias", "version", "for_each"})
# Nested block types the loaders know, with their label count (for JSON attribute forms).
_KNOWN_BLOCKS: Mapping[str, int] = MappingProxyType(
    {"lifecycle": 0, "connection": 0, "provisioner": 1, "dynamic": 1, "_": 0}
)
_CONDITIONS = ("precondition", "postcondition")
_STATIC_ADDR = re.compile(r'^[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*|\[(\d+|"[^"]*")\])*$')
_DEFAULT_REGISTRY = re.compile(r"^(registry\.terraform\.io|registry\.opentofu\.org)/", re.IGNORECASE)


# --- small helpers over items --------------------------------------------------------------


def _key(item: Item) -> str:
    """The name an item hides in a base body (spec §3.1): attributes and ``dynamic "T"`` count as T."""
    if isinstance(item, Attribute):
        return item.name
    if item.type == "dynamic" and item.labels:
        return item.labels[0]
    return item.type


def _attr(items: Iterable[Item], name: str) -> Attribute | None:
    found = None
    for item in items:
        if isinstance(item, Attribute) and item.name == name:
            found = item
    return found


def _collection_under_any(old: Type | None, new: Type | None) -> bool:
    """Whether ``old`` converts a value into a collection where ``new`` holds ``any``."""
    if old is None or new is None:
        return False
    if isinstance(new, AnyType):
        return isinstance(old, (ListType, SetType, MapType)) or (
            isinstance(old, (ObjectType, TupleType)) and has_collection(old)
        )
    if isinstance(new, ObjectType) and isinstance(old, ObjectType):
        olds = old.attribute_map
        return any(_collection_under_any(olds.get(n), t) for n, t in new.attributes)
    if isinstance(new, (ListType, SetType, MapType)) and isinstance(old, (ListType, SetType, MapType)):
        return _collection_under_any(old.element, new.element)
    if isinstance(new, TupleType) and isinstance(old, TupleType) and len(new.elements) == len(old.elements):
        return any(_collection_under_any(o, n) for o, n in zip(old.elements, new.elements, strict=True))
    return False


def _typed_null_under_any(old: Type | None, new: Type | None, value: JsonValue) -> bool:
    """Whether ``value``, as ``old`` converted it, holds a null of ``old``'s type where ``new`` says any.

    Terraform keeps that null typed (an ``object({a0 = bool})`` null), while a null written in
    the output under ``any`` has no type: the value reads the same, but an output or a
    ``terraform_data`` input holding it stores another type, so the next plan shows a change.
    """
    if old is None or new is None or isinstance(old, AnyType):
        return False
    if isinstance(new, AnyType):
        if value is None:
            return True
        if isinstance(old, ObjectType) and isinstance(value, dict):
            return any(_typed_null_under_any(t, new, value.get(n)) for n, t in old.attributes)
        if isinstance(old, TupleType) and isinstance(value, list) and len(value) == len(old.elements):
            return any(_typed_null_under_any(t, new, v) for t, v in zip(old.elements, value, strict=True))
        return False  # a collection here is refused by _collection_under_any; primitives keep types
    if isinstance(new, ObjectType) and isinstance(old, ObjectType) and isinstance(value, dict):
        olds = old.attribute_map
        return any(_typed_null_under_any(olds.get(n), t, value.get(n)) for n, t in new.attributes)
    if (
        isinstance(new, (ListType, SetType))
        and isinstance(old, (ListType, SetType))
        and isinstance(value, list)
    ):
        return any(_typed_null_under_any(old.element, new.element, v) for v in value)
    if isinstance(new, MapType) and isinstance(old, MapType) and isinstance(value, dict):
        return any(_typed_null_under_any(old.element, new.element, v) for v in value.values())
    if (
        isinstance(new, TupleType)
        and isinstance(old, TupleType)
        and isinstance(value, list)
        and len(new.elements) == len(old.elements) == len(value)
    ):
        return any(
            _typed_null_under_any(o, n, v) for o, n, v in zip(old.elements, new.elements, value, strict=True)
        )
    return False


def _blocks(items: Iterable[Item], type_: str) -> list[Block]:
    return [i for i in items if isinstance(i, Block) and i.type == type_]


def _named(items: Iterable[Item], name: str) -> list[Item]:
    """Items called ``name``: attributes of that name and blocks of that type."""
    return [i for i in items if (i.name if isinstance(i, Attribute) else i.type) == name]


def _set_attr(items: list[Item], attr: Attribute) -> list[Item]:
    """Return ``items`` with ``attr`` replacing any attribute of its name (in place) or appended."""
    out: list[Item] = []
    placed = False
    for item in items:
        if isinstance(item, Attribute) and item.name == attr.name:
            if not placed:
                out.append(attr)
                placed = True
            continue
        out.append(item)
    if not placed:
        out.append(attr)
    return out


def _without(items: Iterable[Item], name: str) -> list[Item]:
    return [i for i in items if (i.name if isinstance(i, Attribute) else i.type) != name]


def _with_items(block: Block, items: Sequence[Item]) -> Block:
    return replace(block, body=replace(block.body, items=tuple(items)))


def _as_bool(value: JsonValue) -> bool | None:
    if isinstance(value, bool):
        return value
    if value in ("true", "false"):
        return value == "true"
    return None


def _is_empty_list(value: JsonValue) -> bool:
    return isinstance(value, list) and not value


def _json_body(value: JsonValue, where: Range) -> Body:
    if not isinstance(value, dict):
        return Body()
    return Body(tuple(Attribute(k, Expr(v, where), where) for k, v in value.items() if k != "//"), where)


def _json_blocks(attr: Attribute, labels: int) -> list[Block]:
    """Blocks a JSON property stands for when the loader kept it as an attribute (spec §7.1)."""
    where = attr.expr.range

    def walk(value: JsonValue, depth: int, path: tuple[str, ...]) -> list[Block]:
        if isinstance(value, list):
            return [b for v in value for b in walk(v, depth, path)]
        if depth == 0:
            return [Block(attr.name, path, _json_body(value, where), attr.name_range)]
        if not isinstance(value, dict):
            return []
        return [b for k, v in value.items() for b in walk(v, depth - 1, (*path, k))]

    return walk(attr.expr.value, labels, ())


def _normalize(items: Iterable[Item]) -> list[Item]:
    """Turn JSON-form known meta blocks (``lifecycle``, ``dynamic``, …) into Blocks."""
    out: list[Item] = []
    for item in items:
        if (
            isinstance(item, Attribute)
            and item.name in _KNOWN_BLOCKS
            and isinstance(item.expr.value, (dict, list))
        ):
            out.extend(_json_blocks(item, _KNOWN_BLOCKS[item.name]))
        else:
            out.append(item)
    return out


def merge_bodies(base: Sequence[Item], override: Sequence[Item]) -> list[Item]:
    """Return ``base`` with ``override`` merged in as ``hcl2shim.MergeBodies`` does (spec §3.1).

    An override item named T (attribute, block of type T or ``dynamic "T"``) hides every base item
    named T; everything else in the base survives. ``base`` and ``override`` hold body items only
    (the callers take meta-arguments out first), and the content of an ``_`` escaping block is
    folded into its block's body before merging, so an escaped ``x`` and a plain ``x`` are the
    same argument: either one in the override hides both in the base. Escaped items stay in
    the ``_`` block (their names may be meta-argument names).
    """
    b_items, b_escape = _split_escape(base)
    o_items, o_escape = _split_escape(override)
    keys = {_key(i) for i in [*o_items, *o_escape]}
    merged = _hide(b_items, o_items, keys)
    escaped = _hide(b_escape, o_escape, keys)
    if escaped:
        where = next((i.range for i in [*base, *override] if isinstance(i, Block) and i.type == "_"), None)
        assert where is not None
        merged.append(Block("_", (), Body(tuple(escaped)), where))
    return merged


def _split_escape(items: Sequence[Item]) -> tuple[list[Item], list[Item]]:
    plain: list[Item] = []
    escaped: list[Item] = []
    for item in items:
        if isinstance(item, Block) and item.type == "_":
            escaped.extend(item.body.items)
        else:
            plain.append(item)
    return plain, escaped


def _hide(base: Sequence[Item], override: Sequence[Item], keys: set[str] | None = None) -> list[Item]:
    """Return ``base`` without the items named in ``keys`` (default: ``override``'s names), with
    ``override``'s items in place of the first hidden item of each name, or appended."""
    if keys is None:
        keys = {_key(i) for i in override}
    out: list[Item] = []
    placed: set[str] = set()
    for item in base:
        k = _key(item)
        if k in keys:
            if k not in placed:
                out.extend(i for i in override if _key(i) == k)
                placed.add(k)
            continue
        out.append(item)
    out.extend(i for i in override if _key(i) not in placed)
    return out


# --- the working state ---------------------------------------------------------------------


@dataclass(slots=True)
class _Slot:
    """One top-level block of the module being assembled (internal, mutable while merging)."""

    block: Block
    dropped: bool = False
    origins: list[Range] | None = None  # made by the first override merged in (a list a slot: 5 MB)
    drop_if_empty: bool = False


@dataclass(slots=True)
class _VarState:
    type: Type | None  # None: the type did not parse
    default_set: bool
    default: JsonValue
    overridden: bool = False
    # The type whose optional-attribute defaults Terraform applies: the first declaration's,
    # whatever type an override file sets later (configs.Variable.merge keeps TypeDefaults).
    defaults_type: Type | None = None


@dataclass(slots=True)
class _Merger:
    options: Options
    diags: Diagnostics = field(default_factory=Diagnostics)
    slots: list[_Slot] = field(default_factory=list)
    index: dict[tuple[str, ...], int] = field(default_factory=dict)
    data_in_check: dict[str, tuple[int, int]] = field(default_factory=dict)
    locals_at: dict[str, int] = field(default_factory=dict)
    imports: list[tuple[str, Range]] = field(default_factory=list)
    variables: dict[str, _VarState] = field(default_factory=dict)
    provider_sources: dict[str, str] = field(default_factory=dict)
    provider_metas: dict[str, tuple[int, Block]] = field(default_factory=dict)
    types: dict[str, Type] = field(default_factory=dict)  # parsed type expressions, by text
    extra_terraform: int | None = None
    # Whether override files follow: only they read ``variables`` (a module without any need not
    # keep a decoded state per variable while it is merged: docs/reliability.md, "Memory").
    has_overrides: bool = True

    def allows(self, feature: str) -> bool:
        """Whether the dialect has ``feature`` (flatten/lang/dialect.py)."""
        return self.options.dialect.allows(feature)

    # -- slots --

    def add(self, block: Block) -> int:
        self.slots.append(_Slot(block))
        return len(self.slots) - 1

    def drop(self, i: int) -> None:
        self.slots[i].dropped = True

    def set_block(self, i: int, block: Block, origin: Range | None = None) -> None:
        slot = self.slots[i]
        if origin is not None:
            if not slot.origins:
                slot.origins = [slot.block.range]
            slot.origins.append(origin)
        slot.block = block

    def result(self) -> tuple[Block, ...]:
        out: list[Block] = []
        for slot in self.slots:
            if slot.dropped:
                continue
            block = slot.block
            if slot.drop_if_empty and not block.body.items:
                continue
            if slot.origins:
                block = replace(block, origins=tuple(slot.origins))
            out.append(block)
        return tuple(out)

    # -- diagnostics --

    def dup(self, summary_: str, detail: str, where: Range) -> None:
        self.diags.error(summary_, detail, where)

    # ================================================================ primary files (spec §2)

    def append_file(self, file: ParsedFile) -> None:
        for block in file.body.blocks:
            handler = _APPEND.get(block.type)  # the rule BLOCKS names for this type (lang/blocks.py)
            i = self.add(block)
            if handler is not None:
                handler(self, i, block)

    def _append_terraform(self, i: int, block: Block) -> None:
        for item in block.body.items:
            if not isinstance(item, Block):
                continue
            if item.type == "required_providers":
                self._first_only(i, item, "required_providers", self._dup_required_providers)
            elif item.type == "backend":
                self._first_only(i, item, "backend", self._dup_backend)
            elif item.type == "cloud":
                self._first_only(i, item, "cloud", self._dup_cloud)
            elif item.type == "state_store" and self.allows("state_store"):
                self._first_only(i, item, "state_store", self._dup_state_store)
            elif item.type == "encryption" and self.allows("encryption"):
                self._first_only(i, item, "encryption", self._dup_encryption)
            elif item.type == "provider_meta" and item.labels:
                self._append_provider_meta(i, item)

    def _first_only(self, i: int, item: Block, key: str, report: Callable[[Block, Block], None]) -> None:
        existing = self._tf_find(key)
        if existing is not None:
            report(existing, item)
            self.slots[i].block = _with_items(self.slots[i].block, _drop_identity(self.slots[i].block, item))
            self.slots[i].drop_if_empty = True
            return
        self.index[("tf", key)] = i

    def _tf_find(self, key: str) -> Block | None:
        i = self.index.get(("tf", key))
        if i is None or self.slots[i].dropped:
            return None
        found = _blocks(self.slots[i].block.body.items, key)
        return found[0] if found else None

    def _dup_required_providers(self, existing: Block, item: Block) -> None:
        self.dup(
            "Duplicate required providers configuration",
            "A module may have only one required providers configuration. The required providers "
            f"were previously configured at {existing.range}.",
            item.range,
        )

    def _dup_backend(self, existing: Block, item: Block) -> None:
        self.dup(
            self.options.dialect.word("duplicate_backend"),
            "A module may have only one backend configuration. The backend was previously "
            f"configured at {existing.range}.",
            item.range,
        )

    def _dup_cloud(self, existing: Block, item: Block) -> None:
        self.dup(
            self.options.dialect.word("duplicate_cloud"),
            "A module may have only one 'cloud' block configuring a cloud backend. A cloud backend "
            f"was previously configured at {existing.range}.",
            item.range,
        )

    def _dup_state_store(self, existing: Block, item: Block) -> None:
        self.dup(
            "Duplicate 'state_store' configuration block",
            "A module may have only one state_store configuration. The state store was previously "
            f"configured at {existing.range}.",
            item.range,
        )

    def _dup_encryption(self, existing: Block, item: Block) -> None:
        self.dup(
            "Duplicate encryption configuration",
            "A module may have only one encryption configuration. Encryption was previously "
            f"configured at {existing.range}.",
            item.range,
        )

    def check_state_settings(self) -> None:
        """After every primary file: at most one of backend, cloud and (tf) state_store (spec §2)."""
        backend, cloud = self._tf_find("backend"), self._tf_find("cloud")
        store = self._tf_find("state_store") if self.allows("state_store") else None
        if store is not None and (backend is not None or cloud is not None):
            self._state_store_conflict(store, backend, cloud)
            return
        if backend is not None and cloud is not None:
            self.diags.error(
                self.options.dialect.word("backend_and_cloud"),
                "A module may declare either one 'cloud' block configuring a cloud backend OR one "
                f"'backend' block configuring a state backend. A cloud backend is configured at "
                f"{cloud.range}; a backend is configured at {backend.range}. Remove the backend "
                "block to configure a cloud backend.",
                backend.range,
            )

    def _state_store_conflict(self, store: Block, backend: Block | None, cloud: Block | None) -> None:
        """Terraform only (spec §2): a state_store beside a backend and/or a cloud block."""
        if backend is not None and cloud is not None:
            self.diags.error(
                "Only one of 'cloud', 'state_store', or 'backend' configuration blocks are allowed",
                "A module may declare only one of a 'cloud' block, a 'state_store' block or a 'backend' "
                f"block. A cloud block is configured at {cloud.range}, a backend at {backend.range} and "
                f"a state store at {store.range}.",
                store.range,
            )
        elif backend is not None:
            self.diags.error(
                "Conflicting 'state_store' and 'backend' configuration blocks are present",
                "A module may declare either one 'state_store' block or one 'backend' block. A state "
                f"store is configured at {store.range}; a backend is configured at {backend.range}.",
                store.range,
            )
        elif cloud is not None:
            self.diags.error(
                "Conflicting 'cloud' and 'state_store' configuration blocks are present",
                "A module may declare either one 'cloud' block or one 'state_store' block. A cloud "
                f"backend is configured at {cloud.range}; a state store is configured at {store.range}.",
                store.range,
            )

    def _provider_fqn(self, local: str) -> str:
        source = self.provider_sources.get(local)
        if source is None:
            return f"hashicorp/{local}".lower()
        return _DEFAULT_REGISTRY.sub("", source).lower()

    def _append_provider_meta(self, i: int, item: Block) -> None:
        fqn = self._provider_fqn(item.labels[0])
        previous = self.provider_metas.get(fqn)
        if previous is not None:
            j, existing = previous
            self.dup(
                "Duplicate provider_meta block",
                f'A provider_meta block for provider "{existing.labels[0]}" was already declared at '
                f"{existing.range}. Providers may only have one provider_meta block per module.",
                item.range,
            )
            self.slots[j].block = _with_items(
                self.slots[j].block, _drop_identity(self.slots[j].block, existing)
            )
            self.slots[j].drop_if_empty = True
        self.provider_metas[fqn] = (i, item)

    def _append_provider(self, i: int, block: Block) -> None:
        name = block.labels[0] if block.labels else ""
        alias_attr = block.body.attribute("alias")
        alias = alias_attr.value if alias_attr is not None and isinstance(alias_attr.value, str) else ""
        key = ("provider", name, alias)
        if key in self.index:
            existing = self.slots[self.index[key]].block
            if alias:
                detail = (
                    f'A provider configuration for "{name}" with alias "{alias}" was already given at '
                    f"{existing.range}. Each configuration for the same provider must have a distinct alias."
                )
            else:
                detail = (
                    f'A default (non-aliased) provider configuration for "{name}" was already given at '
                    f'{existing.range}. If multiple configurations are required, set the "alias" argument '
                    "for alternative configurations."
                )
            self.dup("Duplicate provider configuration", detail, block.range)
            self.drop(i)
            return
        self.index[key] = i

    def _append_later_wins(self, i: int, block: Block, summary_: str, detail: str) -> None:
        key = (block.type, *block.labels)
        if key in self.index:
            existing = self.slots[self.index[key]].block
            self.dup(summary_, detail.format(name=block.labels[0], at=existing.range), block.range)
            self.drop(self.index[key])
        self.index[key] = i

    def _append_variable(self, i: int, block: Block) -> None:
        self._append_later_wins(
            i,
            block,
            "Duplicate variable declaration",
            'A variable named "{name}" was already declared at {at}. Variable names must be unique '
            "within a module.",
        )
        if block.labels:
            state = self._decode_variable(block)  # its diagnostics, always
            if self.has_overrides:
                self.variables[block.labels[0]] = state

    def _append_output(self, i: int, block: Block) -> None:
        self._append_later_wins(
            i,
            block,
            "Duplicate output definition",
            'An output named "{name}" was already defined at {at}. Output names must be unique within '
            "a module.",
        )

    def _append_module(self, i: int, block: Block) -> None:
        self._append_later_wins(
            i,
            block,
            "Duplicate module call",
            'A module call named "{name}" was already defined at {at}. Module calls must have unique '
            "names within a module.",
        )

    def _append_locals(self, i: int, block: Block) -> None:
        for attr in block.body.attributes:
            j = self.locals_at.get(attr.name)
            if j is not None:
                holder = self.slots[j].block
                earlier = holder.body.attribute(attr.name)
                assert earlier is not None
                self.dup(
                    "Duplicate local value definition",
                    f'A local value named "{attr.name}" was already defined at {earlier.name_range}. '
                    "Local value names must be unique within a module.",
                    attr.name_range,
                )
                self.slots[j].block = _with_items(holder, _drop_identity(holder, earlier))
                self.slots[j].drop_if_empty = True
            self.locals_at[attr.name] = i

    def _resource_summary(self, kind: str, type_: str) -> str:
        if kind == "resource":
            return f'Duplicate resource "{type_}" configuration'
        if kind == "data":
            return f'Duplicate data "{type_}" configuration'
        if kind == "action":
            return f'Duplicate action "{type_}" configuration'
        return self.options.dialect.word("duplicate_ephemeral", type=type_)

    def _append_resource(self, i: int, block: Block) -> None:
        if len(block.labels) < 2:
            return
        type_, name = block.labels[0], block.labels[1]
        key = (block.type, type_, name)
        existing = self._existing_resource(key)
        if existing is not None:
            noun = {"resource": "resource", "data": "data resource", "action": "action"}.get(
                block.type, "ephemeral resource"
            )
            self.dup(
                self._resource_summary(block.type, type_),
                f'A {type_} {noun} named "{name}" was already declared at {existing.range}. Resource '
                "names must be unique per type in each module.",
                block.range,
            )
            self.drop(i)
            return
        self.index[key] = i

    def _existing_resource(self, key: tuple[str, ...]) -> Block | None:
        if key in self.index:
            return self.slots[self.index[key]].block
        if key[0] == "data" and key[1] + "." + key[2] in self.data_in_check:
            ci, ni = self.data_in_check[key[1] + "." + key[2]]
            nested = self.slots[ci].block.body.items[ni]
            assert isinstance(nested, Block)
            return nested
        return None

    def _append_check(self, i: int, block: Block) -> None:
        for n, item in enumerate(block.body.items):
            if isinstance(item, Block) and item.type == "data" and len(item.labels) >= 2:
                existing = self._existing_resource(("data", item.labels[0], item.labels[1]))
                if existing is not None:
                    self.dup(
                        f'Duplicate data "{item.labels[0]}" configuration',
                        f'A {item.labels[0]} data resource named "{item.labels[1]}" was already declared '
                        f"at {existing.range}. Resource names must be unique per type in each module, "
                        "including within check blocks.",
                        item.range,
                    )
                    self.drop(i)
                    return
                self.data_in_check[item.labels[0] + "." + item.labels[1]] = (i, n)
        name = block.labels[0] if block.labels else ""
        key = ("check", name)
        if key in self.index:
            existing_check = self.slots[self.index[key]].block
            self.dup(
                f'Duplicate check "{name}" configuration',
                f'A check block named "{name}" was already declared at {existing_check.range}. Check '
                "blocks must be unique within each module.",
                block.range,
            )
            self.drop(i)
            return
        self.index[key] = i

    def _append_import(self, i: int, block: Block) -> None:
        to = block.body.attribute("to")
        if to is None or not isinstance(to.value, str):
            return
        addr = to.value.replace(" ", "")
        if not _STATIC_ADDR.match(addr):
            return
        for other, where in self.imports:
            if other == addr:
                self.dup(
                    f'Duplicate import configuration for "{addr}"',
                    f'An import block for the resource "{addr}" was already declared at {where}. A '
                    "resource can have only one import block.",
                    block.range,
                )
        self.imports.append((addr, block.range))

    # ================================================================ variables (spec §3.4)

    def _decode_type(self, block: Block, attr: Attribute | None) -> Type | None:
        if attr is None:
            return self._type("any")
        if not isinstance(attr.value, str):
            self.diags.error(
                "Invalid type specification",
                f"The type of variable {block.labels[0]!r} must be a type expression.",
                attr.expr.range,
            )
            return None
        try:
            return self._type(attr.value)
        except TypeExprError as exc:
            self.diags.error("Invalid type specification", str(exc), attr.expr.range)
            return None

    def _type(self, text: str) -> Type:
        """``parse_type(text)``, each text parsed once per module (most variables share a few
        types; a Type is immutable)."""
        found = self.types.get(text)
        if found is None:
            found = self.types[text] = parse_type(text)
        return found

    def _decode_variable(self, block: Block, *, override: bool = False) -> _VarState:
        """Decode-time checks of a variable block: its type, and its default against that type."""
        type_attr = block.body.attribute("type")
        ty = self._decode_type(block, type_attr) if (type_attr is not None or not override) else None
        default = block.body.attribute("default")
        state = _VarState(ty, default is not None, default.value if default is not None else None)
        state.defaults_type = None if override else ty
        if default is None:
            return state
        value = default.value
        if ty is not None and (type_attr is not None or not override):
            try:
                value = convert(apply_defaults(value, ty), ty)
            except ConversionError as exc:
                self.diags.error(
                    "Invalid default value for variable",
                    f"This default value is not compatible with the variable's type constraint: {exc}.",
                    default.expr.range,
                )
        state.default = value
        nullable = block.body.attribute("nullable")
        if nullable is not None and _as_bool(nullable.value) is False and value is None:
            self.diags.error(
                "Invalid default value for variable",
                "A null default value is not valid when nullable=false.",
                default.expr.range,
            )
        return state

    def _merge_variable_into(self, i: int, base: Block, over: Block) -> None:
        name = base.labels[0]
        items = list(base.body.items)
        for block in _blocks(over.body.items, "validation"):
            self.diags.error(
                "Can't override validation blocks",
                "Input variable validation rules cannot be declared in an override file.",
                block.range,
            )
        for attr_name in ("description", "sensitive", "ephemeral", "const", "nullable", "type", "default"):
            attr = _attr(over.body.items, attr_name)
            if attr is not None:
                items = _set_attr(items, attr)
        deprecated = _attr(over.body.items, "deprecated")
        if (
            self.allows("deprecation_messages")
            and deprecated is not None
            and deprecated.value not in ("", None)
        ):
            items = _set_attr(items, deprecated)
        merged = _with_items(base, items)
        state = self.variables.get(name) or _VarState(parse_type("any"), False, None)
        ov = self._decode_variable(over, override=True)
        ov_type = _attr(over.body.items, "type")
        ov_default = _attr(over.body.items, "default")
        if ov_type is not None:
            if ov_default is None and state.default_set and _collection_under_any(state.type, ov.type):
                # Terraform keeps the default as the earlier type converted it (a map, a list);
                # under the new type's `any`, a default written in the output would be an
                # object or a tuple instead: another value.
                self._refuse_type_override(
                    name,
                    ov_type,
                    "the earlier type made the default a collection (a map, list or set) where the "
                    "new type says any",
                )
            elif (
                ov_default is None
                and state.default_set
                and _typed_null_under_any(state.type, ov.type, state.default)
            ):
                # Terraform keeps the nulls of the default typed by the earlier type; a null the
                # output writes under `any` has no type, and a value holding it plans as changed.
                self._refuse_type_override(
                    name,
                    ov_type,
                    "the earlier type gave a null in the default a type where the new type says any",
                )
            state.type = ov.type
            items = self._keep_type_defaults(name, items, ov_type, ov.type, state.defaults_type)
            merged = _with_items(base, items)
        if ov_default is not None:
            state.default_set = True
            state.default = ov.default
        state.overridden = True
        if state.default_set:
            ok = True
            if state.type is not None and (ov_type is None or ov.type is not None):
                try:
                    state.default = convert(state.default, state.type)
                except ConversionError as exc:
                    ok = False
                    if ov_type is not None and ov_default is None:
                        detail = (
                            "Overriding this variable's type constraint has made its default value invalid"
                        )
                    elif ov_type is None and ov_default is not None:
                        detail = (
                            "The overridden default value for this variable is not compatible with the "
                            "variable's type constraint"
                        )
                    else:
                        detail = "This variable's default value is not compatible with its type constraint"
                    self.diags.error("Invalid default value for variable", f"{detail}: {exc}.", over.range)
            nullable = _attr(items, "nullable")
            if ok and nullable is not None and _as_bool(nullable.value) is False and state.default is None:
                self.diags.error(
                    "Invalid default value for variable",
                    "A null default value is not valid when nullable=false.",
                    over.range,
                )
            current = _attr(items, "default")
            if ok and current is not None and not self._written_default_holds(current.value, state, items):
                items = _set_attr(items, replace(current, expr=replace(current.expr, value=state.default)))
                merged = _with_items(base, items)
        self.variables[name] = state
        self.set_block(i, merged, over.range)

    def _written_default_holds(
        self, written: JsonValue, state: _VarState, items: list[Attribute | Block]
    ) -> bool:
        """Whether the default as written gives the value Terraform gives the merged variable.

        Terraform keeps the default converted by each declaration's type in turn (a base
        ``number`` default "01" is 1, and an override's ``string`` type makes it "1"), then applies
        the first type's optional defaults and converts at use. The output keeps what the user
        wrote unless that would give another value (issue 14, item 2).
        """
        type_attr = _attr(items, "type")
        if state.type is None or type_attr is None or not isinstance(type_attr.value, str):
            return True
        try:
            emitted = parse_type(type_attr.value)
            theirs = convert(apply_defaults(state.default, emitted), state.type)
            ours = convert(
                apply_defaults(convert(apply_defaults(written, emitted), emitted), emitted), state.type
            )
        except (ConversionError, TypeExprError):
            return False
        return _same_json(ours, theirs)

    def _refuse_type_override(self, name: str, attr: Attribute, why: str) -> None:
        self.diags.append(
            Diagnostic(
                Severity.ERROR,
                "Unsupported variable type override",
                f'An override file changes the type of variable "{name}", but Terraform keeps the '
                f"original type's optional attribute defaults and its conversion of the default, and "
                f"{why}, so no type in the flattened output would give the variable the same value. "
                "Write the new type (and its optional defaults) in the variable's own declaration "
                "instead of an override file.",
                attr.expr.range,
                refusal=True,
            )
        )

    def _keep_type_defaults(
        self, name: str, items: list[Attribute | Block], attr: Attribute, new: Type | None, old: Type | None
    ) -> list[Attribute | Block]:
        """Write the override's type with the defaults Terraform applies: the first declaration's.

        Terraform takes an override's type constraint but keeps applying the optional-attribute
        defaults of the variable's first type (docs/overrides.md), so the output's type is the
        override's constraint carrying those defaults; where no type expression can say that,
        the input is refused rather than planned differently.
        """
        if new is None:
            return items
        try:
            emitted = with_defaults_of(new, old)
        except DefaultsMismatch as exc:
            self._refuse_type_override(name, attr, str(exc))
            return items
        if emitted == new:
            return items
        return _set_attr(items, replace(attr, expr=replace(attr.expr, value=type_expression(emitted))))

    # ================================================================ override files (spec §3)

    def merge_file(self, file: ParsedFile) -> None:
        tf_blocks = [b for b in file.body.blocks if b.type == "terraform"]
        if tf_blocks:
            self._merge_terraform(tf_blocks)
        for block in file.body.blocks:
            if block.type == "terraform":
                continue
            handler = _MERGE.get(block.type)  # the rule BLOCKS names for this type (lang/blocks.py)
            if handler is not None:
                handler(self, block)

    def _missing(self, summary_: str, detail: str, where: Range) -> None:
        self.diags.error(summary_, detail, where)

    # -- terraform (§3.2) --

    def _extra_terraform(self, where: Range) -> int:
        if self.extra_terraform is None or self.slots[self.extra_terraform].dropped:
            self.extra_terraform = self.add(Block("terraform", (), Body(), where))
        return self.extra_terraform

    def _tf_items(self, key: str) -> list[tuple[int, Block]]:
        found: list[tuple[int, Block]] = []
        for i, slot in enumerate(self.slots):
            if slot.block.type == "terraform" and not slot.dropped:
                found.extend((i, b) for b in _blocks(slot.block.body.items, key))
        return found

    def _replace_settings(self, kinds: tuple[str, ...], new: Block, origin: Range) -> None:
        """Remove every base block of ``kinds`` and put ``new`` where the first one was."""
        placed = False
        for i, slot in enumerate(self.slots):
            if slot.block.type != "terraform" or slot.dropped:
                continue
            items: list[Item] = []
            changed = False
            for item in slot.block.body.items:
                if isinstance(item, Block) and item.type in kinds:
                    changed = True
                    if not placed:
                        items.append(new)
                        placed = True
                    continue
                items.append(item)
            if changed:
                self.set_block(i, _with_items(slot.block, items), origin)
                slot.drop_if_empty = True
        if not placed:
            j = self._extra_terraform(origin)
            self.slots[j].block = _with_items(self.slots[j].block, [*self.slots[j].block.body.items, new])
        for kind in kinds:
            self.index.pop(("tf", kind), None)

    def _merge_terraform(self, blocks: list[Block]) -> None:
        items = [item for b in blocks for item in b.body.items]
        where = blocks[0].range
        for rp in _blocks(items, "required_providers"):
            self._merge_required_providers(rp)
        backends = _blocks(items, "backend")
        clouds = _blocks(items, "cloud")
        stores = _blocks(items, "state_store") if self.allows("state_store") else []
        settings = ("backend", "cloud", "state_store")
        if len(backends) > 1:
            self.diags.error(
                "Duplicate backend configuration",
                "Each override file may have only one backend configuration. A backend was previously "
                f"configured at {backends[0].range}.",
                backends[1].range,
            )
        elif backends:
            self._replace_settings(settings, backends[0], backends[0].range)
        if len(clouds) > 1:
            self.diags.error(
                self.options.dialect.word("duplicate_cloud"),
                "A module may have only one 'cloud' block configuring a cloud backend. A cloud backend "
                f"was previously configured at {clouds[0].range}.",
                clouds[1].range,
            )
        elif clouds:
            self._replace_settings(settings, clouds[0], clouds[0].range)
        if len(stores) > 1:
            self.diags.error(
                "Duplicate state storage configuration",
                "Each override file may have only one state_store configuration. A state store was "
                f"previously configured at {stores[0].range}.",
                stores[1].range,
            )
        elif stores:
            self._replace_settings(settings, stores[0], stores[0].range)
        if self.allows("encryption"):
            encryptions = _blocks(items, "encryption")
            if len(encryptions) > 1:
                self.diags.error(
                    "Duplicate encryption configuration",
                    "Each override file may have only one encryption configuration. Encryption was "
                    f"previously configured at {encryptions[0].range}.",
                    encryptions[1].range,
                )
            elif encryptions:
                self._merge_encryption(encryptions[0])
        versions = [a for a in items if isinstance(a, Attribute) and a.name == "required_version"]
        if versions:
            self._merge_required_version(versions, where)

    def _merge_required_providers(self, rp: Block) -> None:
        found = self._tf_items("required_providers")
        if not found:
            j = self._extra_terraform(rp.range)
            self.slots[j].block = _with_items(self.slots[j].block, [*self.slots[j].block.body.items, rp])
            return
        i, base = found[0]
        entries = list(base.body.items)
        for attr in rp.body.attributes:
            entries = _set_attr(entries, attr)
        new = replace(_with_items(base, entries), origins=(*(base.origins or (base.range,)), rp.range))
        slot = self.slots[i]
        self.set_block(i, _with_items(slot.block, _swap_identity(slot.block, base, new)), rp.range)

    def _merge_encryption(self, enc: Block) -> None:
        found = self._tf_items("encryption")
        if not found:
            j = self._extra_terraform(enc.range)
            self.slots[j].block = _with_items(self.slots[j].block, [*self.slots[j].block.body.items, enc])
            return
        i, base = found[0]
        new = _with_items(base, _merge_encryption_items(list(base.body.items), list(enc.body.items)))
        slot = self.slots[i]
        self.set_block(i, _with_items(slot.block, _swap_identity(slot.block, base, new)), enc.range)

    def _merge_required_version(self, versions: list[Attribute], where: Range) -> None:
        if self.allows("required_version_per_file"):
            # OpenTofu checks every file's constraint on its own: an override adds one (§3.2).
            for attr in versions:
                self.add(Block("terraform", (), Body((attr,)), where))
            return
        first = True
        for i, slot in enumerate(self.slots):
            if slot.block.type != "terraform" or slot.dropped:
                continue
            items = list(slot.block.body.items)
            if _attr(items, "required_version") is None:
                continue
            if first:
                items = _set_attr(items, versions[0])
                first = False
            else:
                items = _without(items, "required_version")
            self.set_block(i, _with_items(slot.block, items), where)
            slot.drop_if_empty = True
        rest = versions[1:] if not first else versions
        for attr in rest:
            self.add(Block("terraform", (), Body((attr,)), where))

    # -- provider (§3.3) --

    def _merge_provider(self, over: Block) -> None:
        name = over.labels[0] if over.labels else ""
        alias_attr = over.body.attribute("alias")
        alias = alias_attr.value if alias_attr is not None and isinstance(alias_attr.value, str) else ""
        key = ("provider", name, alias)
        i = self.index.get(key)
        if i is None:
            if alias:
                self._missing(
                    "Missing base provider configuration for override",
                    f'There is no {name} provider configuration with the alias "{alias}". An override '
                    "file can only override an aliased provider configuration that was already defined "
                    "in a primary configuration file.",
                    over.range,
                )
                return
            items = [
                it for it in over.body.items if not (isinstance(it, Attribute) and it.name == "for_each")
            ]
            self.index[key] = self.add(_with_items(over, items))
            return
        base = self.slots[i].block
        b_items = _normalize(base.body.items)
        o_items = _normalize(over.body.items)
        meta: list[Item] = [
            it for it in b_items if isinstance(it, Attribute) and it.name in _PROVIDER_META_ATTRS
        ]
        version = _attr(o_items, "version")
        if version is not None:
            meta = _set_attr(meta, version)
        body = merge_bodies(
            [it for it in b_items if not (isinstance(it, Attribute) and it.name in _PROVIDER_META_ATTRS)],
            [it for it in o_items if not (isinstance(it, Attribute) and it.name in _PROVIDER_META_ATTRS)],
        )
        self.set_block(i, _with_items(base, [*meta, *body]), over.range)

    # -- variable, locals, output (§3.4–§3.6) --

    def _merge_variable(self, over: Block) -> None:
        name = over.labels[0] if over.labels else ""
        i = self.index.get(("variable", name))
        if i is None:
            self._missing(
                "Missing base variable declaration to override",
                f'There is no variable named "{name}". An override file can only override a variable '
                "that was already declared in a primary configuration file.",
                over.range,
            )
            return
        self._merge_variable_into(i, self.slots[i].block, over)

    def _merge_locals(self, over: Block) -> None:
        for attr in over.body.attributes:
            i = self.locals_at.get(attr.name)
            if i is None:
                self._missing(
                    "Missing base local value definition to override",
                    f'There is no local value named "{attr.name}". An override file can only override a '
                    "local value that was already defined in a primary configuration file.",
                    attr.name_range,
                )
                continue
            block = self.slots[i].block
            self.set_block(i, _with_items(block, _set_attr(list(block.body.items), attr)), over.range)

    def _unsupported_depends_on(self, items: Sequence[Item]) -> None:
        dep = _attr(items, "depends_on")
        # Only a list gives entries: a value that is not one is "Invalid expression" alone (the
        # decoder's), and leaves the override's DependsOn empty (configs/module_merge.go).
        if dep is not None and isinstance(dep.value, list) and not _is_empty_list(dep.value):
            self.diags.error(
                "Unsupported override",
                "The depends_on argument may not be overridden.",
                dep.expr.range,
            )

    def _no_conditions(self, items: Sequence[Item]) -> None:
        for kind in _CONDITIONS:
            for item in _named(items, kind):
                where = item.range if isinstance(item, Block) else item.name_range
                self.diags.error(
                    f"Can't override {kind} blocks",
                    f"Override files cannot override {kind} blocks.",
                    where,
                )

    def _merge_output(self, over: Block) -> None:
        name = over.labels[0] if over.labels else ""
        i = self.index.get(("output", name))
        if i is None:
            self._missing(
                "Missing base output definition to override",
                f'There is no output named "{name}". An override file can only override an output that '
                "was already defined in a primary configuration file.",
                over.range,
            )
            return
        base = self.slots[i].block
        o_items = over.body.items
        items = list(base.body.items)
        description = _attr(o_items, "description")
        if description is not None and description.value not in ("", None):
            items = _set_attr(items, description)
        names = ["value", "sensitive", "ephemeral"] + (["type"] if self.allows("output_type") else [])
        for attr_name in names:
            attr = _attr(o_items, attr_name)
            if attr is not None:
                items = _set_attr(items, attr)
        deprecated = _attr(o_items, "deprecated")
        if (
            self.allows("deprecation_messages")
            and deprecated is not None
            and deprecated.value not in ("", None)
        ):
            items = _set_attr(items, deprecated)
        self._unsupported_depends_on(o_items)
        self._no_conditions(o_items)
        self.set_block(i, _with_items(base, items), over.range)

    # -- module calls (§3.7) --

    def _merge_module(self, over: Block) -> None:
        name = over.labels[0] if over.labels else ""
        i = self.index.get(("module", name))
        if i is None:
            self._missing(
                "Missing module call to override",
                f'There is no module call named "{name}". An override file can only override a module '
                "call that was defined in a primary configuration file.",
                over.range,
            )
            return
        base = self.slots[i].block
        b_items = _normalize(base.body.items)
        o_items = _normalize(over.body.items)

        def is_meta(it: Item) -> bool:
            if isinstance(it, Attribute):
                return it.name in _MODULE_META_ATTRS
            return it.type == "lifecycle"

        meta = [it for it in b_items if is_meta(it)]
        for attr_name in ("source", "version", "count", "for_each"):
            attr = _attr(o_items, attr_name)
            if attr is not None:
                meta = _set_attr(meta, attr)
        providers = _attr(o_items, "providers")
        if providers is not None and providers.value not in ({}, None):
            meta = _set_attr(meta, providers)
        self._unsupported_depends_on(o_items)
        body = merge_bodies(
            [it for it in b_items if not is_meta(it)], [it for it in o_items if not is_meta(it)]
        )
        merged = self._repetition(_with_items(base, [*meta, *body]))
        self.set_block(i, merged, over.range)

    # -- resources (§3.8) --

    def _merge_resource(self, over: Block) -> None:
        kind = over.type
        if kind == "ephemeral" and not self.allows("ephemeral_overrides"):
            return  # Terraform ignores ephemeral blocks in override files.
        if len(over.labels) < 2:
            return
        type_, name = over.labels[0], over.labels[1]
        key = (kind, type_, name)
        i = self.index.get(key)
        nested = (
            None if i is not None else self.data_in_check.get(f"{type_}.{name}") if kind == "data" else None
        )
        if i is None and nested is None:
            noun = {
                "resource": ("Missing resource to override", "resource", "a resource"),
                "data": ("Missing data resource to override", "data resource", "a data"),
                "ephemeral": ("Missing ephemeral resource to override", "ephemeral resource", "an ephemeral"),
                "action": ("Missing resource to override", "action", "an action"),
            }[kind]
            self._missing(
                noun[0],
                f'There is no {type_} {noun[1]} named "{name}". An override file can only override '
                f"{noun[2]} block defined in a primary configuration file.",
                over.range,
            )
            return
        if i is not None:
            base = self.slots[i].block
            self.set_block(i, self._merged_resource(base, over), over.range)
            return
        assert nested is not None
        ci, ni = nested
        check = self.slots[ci].block
        base_nested = check.body.items[ni]
        assert isinstance(base_nested, Block)
        merged = replace(self._merged_resource(base_nested, over), origins=(base_nested.range, over.range))
        items = list(check.body.items)
        items[ni] = merged
        self.slots[ci].block = _with_items(check, items)

    def _merged_resource(self, base: Block, over: Block) -> Block:
        kind = base.type
        managed = kind == "resource"
        b_items = _normalize(base.body.items)
        o_items = _normalize(over.body.items)
        meta_blocks = {"lifecycle", "connection", "provisioner"} if managed else {"lifecycle"}

        def is_meta(it: Item) -> bool:
            if isinstance(it, Attribute):
                return it.name in _RESOURCE_META_ATTRS
            return it.type in meta_blocks

        meta = [it for it in b_items if is_meta(it)]
        for attr_name in ("count", "for_each", "provider"):
            attr = _attr(o_items, attr_name)
            if attr is not None:
                meta = _set_attr(meta, attr)
        self._unsupported_depends_on(o_items)
        o_lifecycles = _blocks(o_items, "lifecycle")
        for lc in o_lifecycles:
            self._no_conditions(lc.body.items)
        if managed:
            meta = self._merge_lifecycle(meta, o_lifecycles)
            for kind_ in ("connection", "provisioner"):
                replacement = _blocks(o_items, kind_)
                if replacement:
                    meta = [*_without(meta, kind_), *replacement]
        body = merge_bodies(
            [it for it in b_items if not is_meta(it)], [it for it in o_items if not is_meta(it)]
        )
        return self._repetition(_with_items(base, [*meta, *body]))

    def _merge_lifecycle(self, meta: list[Item], overrides: list[Block]) -> list[Item]:
        if not overrides:
            return meta
        base_lcs = _blocks(meta, "lifecycle")
        base = base_lcs[0] if base_lcs else None
        items: list[Item] = list(base.body.items) if base is not None else []
        settable = {"create_before_destroy", "prevent_destroy"} | (
            {"destroy"} if self.allows("lifecycle_destroy") else set()
        )
        for lc in overrides:
            for item in lc.body.items:
                if isinstance(item, Attribute) and item.name in settable:
                    items = _set_attr(items, item)
                elif isinstance(item, Attribute) and item.name == "ignore_changes":
                    current = _attr(items, "ignore_changes")
                    if item.value == "all":
                        items = _set_attr(items, item)
                    elif (
                        isinstance(item.value, list)
                        and item.value
                        and (current is None or current.value != "all")
                    ):
                        items = _set_attr(items, item)  # a non-empty list replaces; "all" is sticky (§3.8)
            triggers = _blocks(lc.body.items, "action_trigger")
            if triggers and self.allows("actions"):
                items = [*_without(items, "action_trigger"), *triggers]
        if base is None:
            if not items:
                return meta
            return [*meta, Block("lifecycle", (), Body(tuple(items)), overrides[0].range)]
        new = _with_items(base, items)
        return [new if it is base else it for it in meta]

    def _repetition(self, block: Block) -> Block:
        """Spec §3.11: several repetition arguments left set by merging: keep what is evaluated.

        Nothing re-checks their exclusion after merging, and at run time the engines look at
        ``count``, then (OpenTofu) ``lifecycle { enabled }``, then ``for_each``, and use the first
        one set. Emitting several would be rejected on re-load ("Invalid combination of ..."), so
        the first is kept and the others dropped, with a warning.
        """
        present: list[tuple[str, Attribute]] = []
        count = block.body.attribute("count")
        if count is not None:
            present.append(("count", count))
        lifecycle = next(block.body.blocks_of("lifecycle"), None)
        enabled = (
            lifecycle.body.attribute("enabled") if lifecycle is not None and self.allows("enabled") else None
        )
        if enabled is not None:
            present.append(("enabled", enabled))
        for_each = block.body.attribute("for_each")
        if for_each is not None:
            present.append(("for_each", for_each))
        if len(present) < 2:
            return block
        (kept, kept_attr), dropped = present[0], present[1:]
        names = [name for name, _ in present]
        what = " and ".join(names) if len(names) == 2 else f"{names[0]}, {names[1]} and {names[2]}"
        dropped_text = " and ".join(f'"{name}" (set at {attr.name_range})' for name, attr in dropped)
        self.diags.warning(
            f"Override leaves both {what} set" if len(names) == 2 else f"Override leaves {what} set",
            f"After override files were applied, {block.address} sets "
            + ", ".join(f'"{name}"' for name in names)
            + f'. {self.options.dialect.product} evaluates "{kept}" first, so the flattened '
            f'configuration keeps "{kept}" and drops {dropped_text}.',
            kept_attr.name_range,
        )
        drop = {id(attr) for _, attr in dropped}
        items: list[Item] = []
        for item in block.body.items:
            if id(item) in drop:
                continue
            if item is lifecycle and enabled is not None and id(enabled) in drop:
                rest = [it for it in item.body.items if it is not enabled]
                if rest:
                    items.append(_with_items(item, rest))
                continue
            items.append(item)
        return _with_items(block, items)

    # -- blocks that may not appear in override files (§3.9) --

    def _merge_cannot(self, over: Block) -> None:
        messages = {
            "moved": (
                "Cannot override 'moved' blocks",
                "Records of moved objects can appear only in normal files, not in override files.",
            ),
            "import": (
                "Cannot override 'import' blocks",
                "Import blocks can appear only in normal files, not in override files.",
            ),
            "removed": (
                "Cannot override 'Removed' blocks",
                "Removed blocks can appear only in normal files, not in override files.",
            ),
            "check": ("Can't override check blocks", "Override files cannot override check blocks."),
            "language": (
                "Language selections in override file",
                "A language block cannot appear in an override file.",
            ),
        }
        if over.type == "removed" and not self.allows("removed_override_error"):
            return
        if over.type == "language" and not self.allows("language_block"):
            return
        summary_, detail = messages[over.type]
        self.diags.error(summary_, detail, over.range)


def _same_json(a: JsonValue, b: JsonValue) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, Decimal)) and isinstance(b, (int, Decimal)):
        return a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_json(a[k], b[k]) for k in a)
    return a == b


def _drop_identity(block: Block, target: Item) -> list[Item]:
    return [it for it in block.body.items if it is not target]


def _swap_identity(block: Block, target: Item, new: Item) -> list[Item]:
    return [new if it is target else it for it in block.body.items]


def _merge_encryption_items(base: list[Item], override: list[Item]) -> list[Item]:
    """``EncryptionConfig.Merge``: labelled blocks by type and labels, targets field by field."""
    out = list(base)
    for item in override:
        if isinstance(item, Attribute):
            out = _set_attr(out, item)
            continue
        match = next(
            (b for b in out if isinstance(b, Block) and b.type == item.type and b.labels == item.labels),
            None,
        )
        if match is None:
            out.append(item)
            continue
        if item.labels:
            merged = merge_bodies(list(match.body.items), list(item.body.items))
        else:
            merged = _merge_encryption_items(list(match.body.items), list(item.body.items))
            enforced = _attr(match.body.items, "enforced")
            if enforced is not None and enforced.value is True:
                merged = _set_attr(merged, enforced)
        out = [_with_items(match, merged) if b is match else b for b in out]
    return out


# Block type -> how a primary file's block is appended and an override file's block applied, as
# flatten/lang/blocks.py names them (a missing method fails here, at import).
_APPEND: Mapping[str, Callable[[_Merger, int, Block], None]] = MappingProxyType(
    {b.name: getattr(_Merger, "_append_" + b.append) for b in BLOCKS if b.append is not None}
)
_MERGE: Mapping[str, Callable[[_Merger, Block], None]] = MappingProxyType(
    {b.name: getattr(_Merger, "_merge_" + b.merge) for b in BLOCKS if b.merge is not None}
)


def _provider_sources(files: Sequence[ParsedFile]) -> dict[str, str]:
    """Local name → source, from the first primary required_providers block and then overrides."""
    sources: dict[str, str] = {}

    def take(rp: Block) -> None:
        for attr in rp.body.attributes:
            value = attr.value
            if isinstance(value, dict) and isinstance(value.get("source"), str):
                source = value["source"]
                assert isinstance(source, str)
                sources[attr.name] = source
            else:
                sources.pop(attr.name, None)

    first = True
    for file in files:
        for block in file.body.blocks_of("terraform"):
            for rp in block.body.blocks_of("required_providers"):
                if file.is_override or first:
                    take(rp)
                    first = first and file.is_override
    return sources


def merge_module(
    files: Sequence[ParsedFile], *, directory: str, options: Options
) -> tuple[Module, Diagnostics]:
    """Return the module that ``files`` declare, with override files applied, and every diagnostic.

    ``files`` are the module's files in Terraform's order (primary files, then override files, as
    ``load_dir`` returns them). Duplicate declarations among primary files are errors (spec §2),
    and so are overrides without a base and the constructs override files may not hold (spec
    §3.9–§3.10); each is reported at the offending block and the merge carries on, so one run
    shows every problem. The module is always returned, even when errors were found.

    >>> from flatten.lang.model import Range
    >>> module, diags = merge_module([], directory=".", options=Options())
    >>> module.blocks, list(diags)
    ((), [])
    """
    merger = _Merger(options)
    merger.provider_sources = _provider_sources(files)
    primaries = [f for f in files if not f.is_override]
    overrides = [f for f in files if f.is_override]
    merger.has_overrides = bool(overrides)
    for file in primaries:
        merger.append_file(file)
    merger.check_state_settings()
    for file in overrides:
        merger.merge_file(file)
    module = Module(directory, merger.result(), tuple(f.filename for f in files))
    return module, merger.diags


def kept_by_merge(module: Module, diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Return the diagnostics of ``diags`` that lie in an expression ``module`` (merged) kept.

    For an error Terraform finds only by evaluating an expression (a JSON string's template,
    ``Code.EVALUATED``): an argument an override file replaced is never evaluated, so its error
    is never reported (terraform internal/configs/module_merge.go keeps the override's
    expression; hcl/json/structure.go parses a template only in ``Value``).
    """
    wanted = list(diags)
    if not wanted:
        return wanted
    kept: dict[str, list[Range]] = {}
    stack = list(module.blocks)
    while stack:
        block = stack.pop()
        for item in block.body.items:
            if isinstance(item, Block):
                stack.append(item)
            else:
                rng = item.expr.range
                kept.setdefault(rng.filename, []).append(rng)
    return [
        d
        for d in wanted
        if d.range is not None and any(range_within(d.range, r) for r in kept.get(d.range.filename, ()))
    ]
