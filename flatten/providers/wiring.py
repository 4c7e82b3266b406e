"""Provider wiring: which configuration every module receives and every resource uses.

Rule for the whole file: configurations are keyed by (module path, provider FQN, alias), never by
local name (spec §4.2, ``transform_provider.go``). In each module, in this order:

1. its own ``provider`` blocks are configurations, except an empty block whose key the caller
   passes in the ``providers`` map (that one becomes a proxy);
2. each ``providers`` map item creates a proxy in the child for the child-side key, pointing at
   the configuration the parent-side reference names in the caller;
3. every default (alias-less) configuration available in the parent and not set by 1 or 2 is
   inherited, whether or not the call has a ``providers`` map (tf issue #35781: the map does not
   cancel inheritance of defaults it does not mention). Aliased configurations are never inherited.

A resource uses the configuration with its module path, FQN and alias; a default it cannot find
becomes an implicit empty configuration in the root module, and the root gets one for every
``required_providers`` entry without a block. When validation (``validate.py``) runs, and
with which types, depends on what loading found (``checks.py``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from flatten.lang.diagnostics import Diagnostics
from flatten.lang.model import Range, module_address
from flatten.lang.options import Options
from flatten.stages.graph import ModuleGraph

from .addresses import ConfigAddr, ConfigRef, Naming, Provider
from .declarations import ModuleDecl, ResourceDecl, declare_module
from .validate import validate_provider_configs

__all__ = [
    "Binding",
    "How",
    "ModuleWiring",
    "ProviderWiring",
    "ResourceWiring",
    "declare_all",
    "wire_providers",
]


class How(StrEnum):
    """How a configuration is available in a module."""

    OWN = "own"  # a provider block in this module
    PASSED = "passed"  # a proxy created by the caller's providers map
    INHERITED = "inherited"  # a default configuration of an ancestor
    IMPLICIT = "implicit"  # an empty default configuration the root gets implicitly


@dataclass(frozen=True, slots=True)
class Binding:
    """A configuration available in ``module`` under ``key`` (the local ``name[.alias]``).

    ``upstream`` is the binding it comes from (the caller's for PASSED, the parent's for
    INHERITED); following it ends at an OWN or IMPLICIT binding, or at None when the
    configuration is missing.
    """

    module: tuple[str, ...]
    key: str
    addr: ConfigAddr
    how: How
    range: Range | None = None  # OWN: the block; PASSED: the providers map item
    parent_ref: ConfigRef | None = None  # PASSED: the caller-side reference
    upstream: Binding | None = None
    empty: bool = False  # OWN: an empty block

    @property
    def target(self) -> ConfigAddr | None:
        """Return the real configuration at the end of the chain, or None when there is none."""
        b: Binding | None = self
        while b is not None and b.how in (How.PASSED, How.INHERITED):
            b = b.upstream
        return b.addr if b is not None else None

    def chain(self) -> Iterator[Binding]:
        b: Binding | None = self
        while b is not None:
            yield b
            b = b.upstream


@dataclass(frozen=True, slots=True)
class ResourceWiring:
    """The configuration one resource/data/ephemeral/import block uses."""

    module: tuple[str, ...]
    decl: ResourceDecl
    ref: ConfigRef  # the reference: explicit ``provider`` argument or implied local name
    provider: Provider
    binding: Binding | None  # None: an aliased configuration that is neither declared nor passed

    @property
    def address(self) -> str:
        prefix = module_address(self.module)
        return f"{prefix}.{self.decl.address}" if prefix else self.decl.address

    @property
    def config(self) -> ConfigAddr | None:
        """The absolute address of the configuration used, or None when it is missing."""
        return self.binding.target if self.binding is not None else None

    @property
    def declared_in(self) -> tuple[str, ...] | None:
        config = self.config
        return config.module if config is not None else None


@dataclass(frozen=True, slots=True)
class ModuleWiring:
    """One module path: what it receives, what it configures itself, and its resources."""

    path: tuple[str, ...]
    directory: str
    source: str
    received: tuple[Binding, ...]
    own: tuple[Binding, ...]
    resources: tuple[ResourceWiring, ...]

    @property
    def address(self) -> str:
        return module_address(self.path)


@dataclass(frozen=True, slots=True)
class ProviderWiring:
    """The wiring of a whole configuration, module by module in graph walk order."""

    modules: tuple[ModuleWiring, ...] = ()
    decls: Mapping[tuple[str, ...], ModuleDecl] = field(default_factory=dict)

    def module_at(self, path: tuple[str, ...]) -> ModuleWiring | None:
        for m in self.modules:
            if m.path == path:
                return m
        return None

    def module(self, address: str) -> ModuleWiring | None:
        for m in self.modules:
            if m.address == address:
                return m
        return None

    def resources(self) -> Iterator[ResourceWiring]:
        for m in self.modules:
            yield from m.resources

    def resource(self, address: str) -> ResourceWiring | None:
        for r in self.resources():
            if r.address == address:
                return r
        return None


def declare_all(graph: ModuleGraph, *, options: Options) -> dict[tuple[str, ...], ModuleDecl]:
    """Return every module's provider declarations, by module path."""
    naming = Naming(options.dialect)
    root_dir: Path | None = graph.root.directory
    return {node.path: declare_module(node, naming=naming, root=root_dir) for node in graph.walk()}


def _implicit(provider: Provider) -> Binding:
    addr = ConfigAddr((), provider)
    return Binding((), provider.type, addr, How.IMPLICIT)


def _wire_module(
    decl: ModuleDecl,
    parent: ModuleDecl | None,
    parent_avail: Mapping[tuple[Provider, str], Binding],
    passed_entries: tuple[tuple[ConfigRef, ConfigRef, Range], ...],
) -> tuple[dict[tuple[Provider, str], Binding], list[Binding], list[Binding]]:
    path = decl.path
    avail: dict[tuple[Provider, str], Binding] = {}
    own: list[Binding] = []
    received: list[Binding] = []
    passed_keys = {child.compact for child, _, _ in passed_entries}
    for block in decl.blocks:
        if block.empty and block.key in passed_keys:
            continue  # replaced by the proxy the caller's providers map creates
        fqn = decl.fqn(block.name)
        binding = Binding(
            path, block.key, ConfigAddr(path, fqn, block.alias), How.OWN, block.range, empty=block.empty
        )
        avail.setdefault((fqn, block.alias), binding)
        own.append(binding)
    if not path:
        for req in decl.requirements:
            if (req.provider, "") not in avail:
                implicit = Binding((), req.name, ConfigAddr((), req.provider), How.IMPLICIT)
                avail[(req.provider, "")] = implicit
                own.append(implicit)
    for child, parent_ref, rng in passed_entries:
        fqn = decl.fqn(child.name)
        slot = (fqn, child.alias)
        existing = avail.get(slot)
        if existing is not None and existing.how is How.OWN:
            continue  # "Cannot override provider configuration" (validate.py); the own block stays
        upstream: Binding | None = None
        if parent is not None:
            pfqn = parent.fqn(parent_ref.name)
            upstream = parent_avail.get((pfqn, parent_ref.alias))
            if upstream is None and not parent_ref.alias:
                upstream = _implicit(pfqn)
        binding = Binding(
            path, child.compact, ConfigAddr(path, fqn, child.alias), How.PASSED, rng, parent_ref, upstream
        )
        avail[slot] = binding
        received.append(binding)
    for (fqn, alias), upstream in sorted(parent_avail.items(), key=lambda kv: str(kv[1].addr)):
        if alias or (fqn, alias) in avail:
            continue
        binding = Binding(path, upstream.key, upstream.addr, How.INHERITED, upstream=upstream)
        avail[(fqn, alias)] = binding
        received.append(binding)
    return avail, own, received


def _wire_resources(decl: ModuleDecl, avail: Mapping[tuple[Provider, str], Binding]) -> list[ResourceWiring]:
    """Return the wiring of each of ``decl``'s resources.

    Most resources of a module name one provider (by their implied local name): each distinct
    reference is resolved once, and its resources share the (immutable) reference and binding.
    """
    resolved: dict[ConfigRef | str, tuple[ConfigRef, Provider, Binding | None]] = {}
    out: list[ResourceWiring] = []
    for res in decl.resources:
        # Without a ``provider`` argument the reference follows from the resource type alone.
        by: ConfigRef | str = res.ref if res.ref is not None else res.type
        found = resolved.get(by)
        if found is None:
            ref = res.ref if res.ref is not None else ConfigRef(res.local_name)
            fqn = decl.fqn(ref.name)
            binding = avail.get((fqn, ref.alias))
            if binding is None and not ref.alias:
                binding = _implicit(fqn)
            found = resolved[by] = (ref, fqn, binding)
        out.append(ResourceWiring(decl.path, res, *found))
    return out


def _resolve_imports(resources: list[ResourceWiring]) -> list[ResourceWiring]:
    """An import without ``provider`` uses the configuration of the resource it targets."""
    if not any(r.decl.mode == "import" and r.decl.ref is None for r in resources):
        return resources  # the usual case: no address of every resource to make
    by_address = {r.address: r for r in resources if r.decl.mode != "import"}
    out: list[ResourceWiring] = []
    for r in resources:
        if r.decl.mode == "import" and r.decl.ref is None:
            target = by_address.get(_strip_keys(r.decl.name))
            if target is not None:
                r = ResourceWiring(r.module, r.decl, target.ref, target.provider, target.binding)
        out.append(r)
    return out


def _strip_keys(address: str) -> str:
    out, depth = [], 0
    for ch in address:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def wire_providers(
    graph: ModuleGraph, *, options: Options, validate: bool = True, resolved: bool = True
) -> tuple[ProviderWiring, Diagnostics]:
    """Return the provider wiring of every module and resource in ``graph``, and its diagnostics.

    The diagnostics are those of ``validateProviderConfigs`` (spec §4.7–§4.8), children first,
    each with its module path; ``validate=False`` skips them (the audit of a tree with errors), and
    ``resolved=False`` validates as Terraform does when child modules had load errors (see
    ``validate_provider_configs``). Resolution itself never fails: a missing configuration is a
    binding of None.
    """
    decls = declare_all(graph, options=options)
    avail: dict[tuple[str, ...], dict[tuple[Provider, str], Binding]] = {}
    modules: list[ModuleWiring] = []
    all_resources: list[ResourceWiring] = []
    for node in graph.walk():
        decl = decls[node.path]
        parent_path = node.path[:-1]
        parent = decls.get(parent_path) if node.path else None
        entries: tuple[tuple[ConfigRef, ConfigRef, Range], ...] = ()
        if node.path:
            call = next((c for c in decls[parent_path].calls if c.name == node.path[-1]), None)
            if call is not None:
                entries = tuple((e.child, e.parent, e.range) for e in call.passed)
        here, own, received = _wire_module(decl, parent, avail.get(parent_path, {}), entries)
        avail[node.path] = here
        resources = _wire_resources(decl, here)
        all_resources.extend(resources)
        modules.append(
            ModuleWiring(
                node.path,
                node.module.directory,
                node.call.source if node.call is not None else ".",
                tuple(received),
                tuple(own),
                tuple(resources),
            )
        )
    wired = iter(_resolve_imports(all_resources))
    modules = [
        ModuleWiring(
            m.path, m.directory, m.source, m.received, m.own, tuple(next(wired) for _ in m.resources)
        )
        for m in modules
    ]
    diags = (
        validate_provider_configs(graph, decls, options=options, resolved=resolved)
        if validate
        else Diagnostics()
    )
    return ProviderWiring(tuple(modules), decls), diags
