"""What one merged module declares about providers, read into typed values.

Rule for the whole file: this is a read-only view of a merged ``Module`` (spec §4.2, §4.6): the
``required_providers`` entries, the ``provider`` blocks, every resource-like block with its
provider reference, and each module call's ``providers`` map and meta-arguments. Nothing here
reports diagnostics: the decoder (``flatten.stages.decode``) already reported malformed entries, and a
malformed entry is simply left out. Values keep their source ranges.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from flatten import gate
from flatten.lang.model import Attribute, Block, Expr, JsonValue, Pos, Range
from flatten.lang.options import Dialect
from flatten.stages.graph import ModuleCall, ModuleNode

from .addresses import ConfigRef, InvalidReference, Naming, Provider, implied_local_name, parse_config_ref

__all__ = [
    "CallDecl",
    "ModuleDecl",
    "PassedEntry",
    "ProviderBlock",
    "Requirement",
    "ResourceDecl",
    "declare_module",
]


@dataclass(frozen=True, slots=True)
class Requirement:
    """A ``required_providers`` entry: local name, provider (None for an invalid source), aliases."""

    name: str
    provider: Provider
    aliases: tuple[ConfigRef, ...]
    range: Range
    explicit_source: bool  # False for the legacy string form or an object without ``source``
    version: str | None = None


@dataclass(frozen=True, slots=True)
class ProviderBlock:
    """A ``provider`` block: ``empty`` when its body has nothing but ``alias``/``for_each``."""

    name: str
    alias: str
    empty: bool
    range: Range
    for_each: Expr | None
    native: bool  # written in native syntax (only those take part in for_each comparisons)
    version: str | None = None  # the deprecated ``version`` argument

    @property
    def key(self) -> str:
        return f"{self.name}.{self.alias}" if self.alias else self.name


@dataclass(frozen=True, slots=True)
class ResourceDecl:
    """A managed/data/ephemeral resource or an import block, and the configuration it names."""

    mode: str  # "managed", "data", "ephemeral" or "import"
    type: str
    name: str
    ref: ConfigRef | None  # the ``provider`` argument, if any
    ref_range: Range | None
    range: Range
    for_each: Expr | None
    native: bool

    @property
    def address(self) -> str:
        if self.mode == "managed":
            return f"{self.type}.{self.name}"
        if self.mode == "import":
            return f"import.{self.name}"
        return f"{self.mode}.{self.type}.{self.name}"

    @property
    def local_name(self) -> str:
        return self.ref.name if self.ref is not None else implied_local_name(self.type)


@dataclass(frozen=True, slots=True)
class PassedEntry:
    """One ``providers`` map item: child side ``key = value`` parent side, and where it is written."""

    child: ConfigRef
    parent: ConfigRef
    range: Range  # the whole item (its line)
    child_range: Range
    parent_range: Range


@dataclass(frozen=True, slots=True)
class CallDecl:
    """A module call as provider wiring sees it."""

    name: str
    source: str
    range: Range
    passed: tuple[PassedEntry, ...]
    providers_range: Range | None
    no_config_range: Range | None  # count / for_each / enabled / depends_on, first found in that order
    no_config_argument: str
    for_each: Expr | None
    native: bool


@dataclass(frozen=True, slots=True)
class ModuleDecl:
    """Everything one module declares about providers."""

    path: tuple[str, ...]
    naming: Naming
    requirements: tuple[Requirement, ...]
    blocks: tuple[ProviderBlock, ...]
    resources: tuple[ResourceDecl, ...]
    calls: tuple[CallDecl, ...]

    def requirement(self, name: str) -> Requirement | None:
        for req in self.requirements:
            if req.name == name:
                return req
        return None

    def fqn(self, local_name: str) -> Provider:
        """The provider a local name means here (``ImpliedProviderForUnqualifiedType``)."""
        req = self.requirement(local_name)
        return req.provider if req is not None else self.naming.implied(local_name)

    def declared_type(self, local_name: str) -> Provider | None:
        """The type validation knows for a local name (spec §4.6), or None when untyped."""
        req = self.requirement(local_name)
        if req is not None:
            return req.provider
        if any(b.name == local_name for b in self.blocks):
            # NewDefaultProvider, even for "terraform" (resolveProviderTypes; Terraform 1.11 agrees).
            return self.naming.default(local_name)
        return None

    def block(self, key: str) -> ProviderBlock | None:
        for b in self.blocks:
            if b.key == key:
                return b
        return None


def _unwrap(value: JsonValue) -> str | None:
    if not isinstance(value, str):
        return None
    text = value.strip()
    if text.startswith("${") and text.endswith("}"):
        text = text[2:-1].strip()
    return text


def _ref(attr: Attribute | None) -> ConfigRef | None:
    if attr is None:
        return None
    try:
        return parse_config_ref(attr.value)
    except InvalidReference:
        return None


def _requirements(blocks: list[Block], naming: Naming) -> list[Requirement]:
    out: dict[str, Requirement] = {}
    for block in blocks:
        for nested in block.body.blocks_of("required_providers"):
            for attr in nested.body.attributes:
                provider: Provider | None = naming.implied(attr.name)
                aliases: list[ConfigRef] = []
                explicit = False
                version: str | None = None
                value = attr.value
                if isinstance(value, str):
                    version = value
                if isinstance(value, dict):
                    raw_version = value.get("version")
                    version = raw_version if isinstance(raw_version, str) else None
                    source = value.get("source")
                    if isinstance(source, str):
                        provider = naming.parse_source(source)
                        explicit = True
                    raw_aliases = value.get("configuration_aliases")
                    if isinstance(raw_aliases, list):
                        for item in raw_aliases:
                            try:
                                ref = parse_config_ref(item)
                            except InvalidReference:
                                continue
                            if ref.alias and ref.name == attr.name:
                                aliases.append(ref)
                elif not isinstance(value, str):
                    continue
                if provider is None:
                    continue
                rng = Range(attr.name_range.filename, attr.name_range.start, attr.expr.range.end)
                out[attr.name] = Requirement(attr.name, provider, tuple(aliases), rng, explicit, version)
    return list(out.values())


def _provider_block(block: Block) -> ProviderBlock | None:
    if not block.labels:
        return None
    alias_attr = block.body.attribute("alias")
    alias = _unwrap(alias_attr.value) if alias_attr is not None else ""
    content = [
        i for i in block.body.items if not (isinstance(i, Attribute) and i.name in ("alias", "for_each"))
    ]
    for_each = block.body.attribute("for_each")
    version_attr = block.body.attribute("version")
    return ProviderBlock(
        block.labels[0],
        alias or "",
        empty=not content,
        range=block.range,
        for_each=for_each.expr if for_each is not None else None,
        native=not block.range.filename.endswith(".json"),
        version=version_attr.value
        if version_attr is not None and isinstance(version_attr.value, str)
        else None,
    )


_MODES = MappingProxyType({"resource": "managed", "data": "data", "ephemeral": "ephemeral"})


def _resources(blocks: tuple[Block, ...]) -> list[ResourceDecl]:
    out: list[ResourceDecl] = []
    for block in blocks:
        if block.type in _MODES and len(block.labels) == 2:
            # The range is built from its packed key on each read: once here, and only for the
            # blocks kept. ``attribute`` rather than one pass over the items: a body from the
            # module cache answers it without decoding when the argument is absent.
            # One that has either is read through a copy: kept decoded, every such body of a
            # module would stay beside the rest of the build (docs/reliability.md, "Memory").
            rng = block.range
            body = block.body
            if body.has_attribute("provider") or body.has_attribute("for_each"):
                body = body.peek()
            provider = body.attribute("provider")
            for_each = body.attribute("for_each")
            out.append(
                ResourceDecl(
                    _MODES[block.type],
                    block.labels[0],
                    block.labels[1],
                    _ref(provider),
                    provider.expr.range if provider is not None else None,
                    rng,
                    for_each.expr if for_each is not None else None,
                    not rng.filename.endswith(".json"),
                )
            )
        elif block.type == "import":
            to_attr = block.body.attribute("to")
            to = _unwrap(to_attr.value) if to_attr is not None else None
            if not to:
                continue
            parts = [p for p in to.split(".") if p]
            while len(parts) >= 2 and parts[0] == "module":
                parts = parts[2:]
            if parts and parts[0] in ("data", "ephemeral"):
                parts = parts[1:]
            if not parts:
                continue
            type_ = parts[0].split("[", 1)[0]
            provider = block.body.attribute("provider")
            rng = block.range
            out.append(
                ResourceDecl(
                    "import",
                    type_,
                    to,
                    _ref(provider),
                    provider.expr.range if provider is not None else None,
                    rng,
                    None,
                    not rng.filename.endswith(".json"),
                )
            )
    return out


def _read_lines(root: Path | None, filename: str) -> list[str]:
    if root is None:
        return []
    read = gate.source_reader(root)(filename)  # what the build itself may read (issue 38)
    return read.splitlines() if read is not None else []


def _key_range(lines: list[str], attr: Attribute, key: str, value: str) -> tuple[Range, Range, Range]:
    """Find the ``key = value`` item of a ``providers`` map in the source text (ranges are not stored)."""
    rng = attr.expr.range
    fallback = (rng, rng, rng)
    for lineno in range(rng.start.line, min(rng.end.line, len(lines)) + 1):
        text = lines[lineno - 1]
        for quoted in (f'"{key}"', key):
            col = text.find(quoted)
            while col >= 0:
                before = text[col - 1] if col > 0 else " "
                after = text[col + len(quoted) :].lstrip()
                if (before in ' \t{,"' or quoted.startswith('"')) and after[:1] in ("=", ":"):
                    vcol = text.find(value, col + len(quoted))
                    vcol = vcol if vcol >= 0 else col
                    # Terraform points at a reference's NameRange: the local name, not the alias.
                    key_len = len(quoted) if quoted.startswith('"') else len(key.split(".", 1)[0])
                    key_r = _span(rng.filename, lineno, col, col + key_len)
                    val_r = _span(rng.filename, lineno, vcol, vcol + len(value.split(".", 1)[0]))
                    # The item ends with its value (on one line with other items, or before " }").
                    found = text.find(value, col + len(quoted)) >= 0 and bool(value)
                    end = vcol + len(value) if found else len(text.rstrip().rstrip(","))
                    return _span(rng.filename, lineno, col, max(end, col + len(quoted))), key_r, val_r
                col = text.find(quoted, col + 1)
    return fallback


def _span(filename: str, line: int, start: int, end: int) -> Range:
    # Byte offsets are not known here; columns are 1-based character positions.
    return Range(filename, Pos(line, start + 1, 0), Pos(line, end + 1, 0))


def _call(call: ModuleCall, root: Path | None, dialect: Dialect) -> CallDecl:
    body = call.block.body
    passed: list[PassedEntry] = []
    providers = body.attribute("providers")
    if providers is not None and isinstance(providers.value, dict):
        lines = _read_lines(root, providers.expr.range.filename)
        for key, value in providers.value.items():
            try:
                child = parse_config_ref(key)
                parent = parse_config_ref(value)
            except InvalidReference:
                continue
            text = value if isinstance(value, str) else ""
            whole, key_r, val_r = _key_range(lines, providers, key, text)
            passed.append(PassedEntry(child, parent, whole, key_r, val_r))
    no_range: Range | None = None
    argument = ""
    candidates: list[tuple[str, Range | None]] = []
    for name in ("count", "for_each"):
        attr = body.attribute(name)
        candidates.append((name, attr.expr.range if attr is not None else None))
    if dialect.allows("enabled"):
        enabled: Range | None = None
        for lc in body.blocks_of("lifecycle"):
            attr = lc.body.attribute("enabled")
            if attr is not None:
                enabled = attr.expr.range
        candidates.append(("enabled", enabled))
    depends = body.attribute("depends_on")
    if depends is not None and depends.value != []:
        candidates.append(("depends_on", depends.expr.range))
    for name, rng in candidates:
        if rng is not None:
            no_range, argument = rng, name
            break
    for_each = body.attribute("for_each")
    return CallDecl(
        call.name,
        call.source,
        call.block.range,
        tuple(passed),
        providers.expr.range if providers is not None else None,
        no_range,
        argument,
        for_each.expr if for_each is not None else None,
        not call.block.range.filename.endswith(".json"),
    )


def declare_module(node: ModuleNode, *, naming: Naming, root: Path | None) -> ModuleDecl:
    """Return what ``node``'s module declares about providers.

    ``root`` is the build root, used to find the line of each ``providers`` map item.
    """
    module = node.module
    terraform_blocks = list(module.blocks_of("terraform"))
    blocks = [b for b in (_provider_block(b) for b in module.blocks_of("provider")) if b is not None]
    return ModuleDecl(
        node.path,
        naming,
        tuple(_requirements(terraform_blocks, naming)),
        tuple(blocks),
        tuple(_resources(module.blocks)),
        tuple(_call(c, root, naming.dialect) for c in node.calls),
    )
