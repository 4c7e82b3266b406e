"""``build --explicit-providers``: write every implicit provider inheritance as an explicit pass.

Rule for the whole file: the rewrite changes declarations, never wiring. Every default
configuration a module inherits and that some resource below it uses becomes an item of the
``providers`` map on the call, with a ``required_providers`` entry (``source``) for the local name
on both sides; every aliased configuration passed to a module is declared with
``configuration_aliases`` (a passed empty proxy block is dropped in favour of it); a default that
only exists as the root's implicit empty configuration gets a root ``required_providers`` entry.
Modules written once for several paths (one directory called twice) get the union of their
rewrites, so inheritance is made explicit wherever any instance needs it. The result is wired
again and compared resource by resource with the original (``wire_providers``); a difference is
reported as an error instead of emitting a different configuration.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace

from flatten.lang.diagnostics import Diagnostics
from flatten.lang.model import Attribute, Block, Body, Expr, JsonValue, Module, Range
from flatten.lang.options import Options
from flatten.stages.graph import ModuleGraph, ModuleNode

from .addresses import Naming, Provider
from .declarations import ModuleDecl
from .wiring import Binding, How, ProviderWiring, wire_providers

__all__ = ["RewrittenGraph", "make_explicit"]


class RewrittenGraph(ModuleGraph):
    """A module graph whose modules are replaced by rewritten ones (same paths, calls, directories)."""

    def __init__(self, base: ModuleGraph, modules: Mapping[str, Module]) -> None:
        # graph.py offers no public way to swap modules; share the base graph's structure.
        super().__init__(base._graph)
        self._base = base
        self._modules = dict(modules)

    def node(self, address: str) -> ModuleNode:
        node = self._base.node(address)
        module = self._modules.get(address)
        if module is None:
            return node
        calls = tuple(replace(c, block=_call_block(module, c.name) or c.block) for c in node.calls)
        return replace(node, module=module, calls=calls)


def _call_block(module: Module, name: str) -> Block | None:
    return next((b for b in module.blocks_of("module") if b.labels and b.labels[0] == name), None)


@dataclass
class _Edits:
    """Changes to one module directory (accumulated over every path written from it)."""

    requirements: dict[str, tuple[Provider, set[str]]]  # local name -> provider, aliases
    passes: dict[str, dict[str, str]]  # call name -> child key -> parent reference
    drop_blocks: set[str]  # empty provider block keys replaced by declarations


def _source(provider: Provider, naming: Naming) -> str:
    if provider.hostname == naming.default_host:
        return f"{provider.namespace}/{provider.type}"
    return str(provider)


def _local_name(decl: ModuleDecl, provider: Provider, edits: _Edits) -> str:
    """A local name that means ``provider`` in this module (adding none that clashes)."""
    for req in decl.requirements:
        if req.provider == provider:
            return req.name
    for name, (p, _) in edits.requirements.items():
        if p == provider:
            return name
    if decl.fqn(provider.type) == provider:
        return provider.type
    name, n = f"{provider.type}-{provider.namespace}", 2
    while decl.requirement(name) is not None or name in edits.requirements:
        name, n = f"{provider.type}-{provider.namespace}{n}", n + 1
    return name


def _lookup(wiring: ProviderWiring, path: tuple[str, ...], provider: Provider) -> Binding | None:
    module = wiring.module_at(path)
    if module is None:
        return None
    for b in (*module.own, *module.received):
        if b.addr.provider == provider and not b.addr.alias:
            return b
    return None


def _needed(
    wiring: ProviderWiring, dirs: Mapping[tuple[str, ...], str]
) -> set[tuple[tuple[str, ...], Provider]]:
    """Inherited default bindings (path, provider) to make explicit, closed over shared directories."""
    need: set[tuple[tuple[str, ...], Provider]] = set()
    for res in wiring.resources():
        if res.binding is None:
            continue
        for b in res.binding.chain():
            if b.how is How.INHERITED:
                need.add((b.module, b.addr.provider))
    by_dir: dict[str, list[tuple[str, ...]]] = {}
    for path, d in dirs.items():
        by_dir.setdefault(d, []).append(path)
    changed = True
    while changed:
        changed = False
        for path, provider in sorted(need, key=lambda x: (x[0], str(x[1]))):
            caller, name = path[:-1], path[-1]
            candidates = [(*other, name) for other in by_dir.get(dirs.get(caller, ""), [caller])]
            candidates.append(caller)
            for q in candidates:
                found = _lookup(wiring, q, provider)
                if q and found is not None and found.how is How.INHERITED and (q, provider) not in need:
                    need.add((q, provider))
                    changed = True
    return need


def _plan(
    graph: ModuleGraph, wiring: ProviderWiring, naming: Naming
) -> tuple[dict[str, _Edits], dict[tuple[str, ...], str]]:
    dirs: dict[tuple[str, ...], str] = {}
    for node in graph.walk():
        dirs[node.path] = str(node.directory.resolve()) if node.directory is not None else node.address
    edits: dict[str, _Edits] = {d: _Edits({}, {}, set()) for d in set(dirs.values())}
    decls = wiring.decls
    # Aliased passes: declare them with configuration_aliases; unaliased ones get a requirement.
    passed_everywhere: dict[str, dict[str, bool]] = {}
    for module in wiring.modules:
        if not module.path:
            continue
        d, decl = dirs[module.path], decls[module.path]
        flags = passed_everywhere.setdefault(d, {})
        for block in decl.blocks:
            if block.empty:
                passed = any(b.how is How.PASSED and b.key == block.key for b in module.received)
                flags[block.key] = flags.get(block.key, True) and passed
        for b in module.received:
            if b.how is not How.PASSED:
                continue
            name, _, alias = b.key.partition(".")
            provider, aliases = edits[d].requirements.get(name, (decl.fqn(name), set()))
            if alias:
                aliases.add(b.key)
            edits[d].requirements[name] = (provider, aliases)
    for d, flags in passed_everywhere.items():
        edits[d].drop_blocks |= {k for k, ok in flags.items() if ok}
    # Inherited defaults that resources use: explicit items on the call, declared on both sides.
    for path, provider in sorted(_needed(wiring, dirs), key=lambda x: (x[0], str(x[1]))):
        caller = path[:-1]
        child_edits, caller_edits = edits[dirs[path]], edits[dirs[caller]]
        child_name = _local_name(decls[path], provider, child_edits)
        parent_name = _local_name(decls[caller], provider, caller_edits)
        child_edits.requirements.setdefault(child_name, (provider, set()))
        caller_edits.requirements.setdefault(parent_name, (provider, set()))
        caller_edits.passes.setdefault(path[-1], {}).setdefault(child_name, parent_name)
    # Defaults that exist only as the root's implicit configuration get a root requirement.
    root_decl = decls[()]
    for res in wiring.resources():
        used = res.binding
        target = used.target if used is not None else None
        if target is None or target.module or used is None:
            continue
        last = list(used.chain())[-1]
        if last.how is How.IMPLICIT and root_decl.requirement(last.key) is None and res.module:
            name = _local_name(root_decl, target.provider, edits[dirs[()]])
            edits[dirs[()]].requirements.setdefault(name, (target.provider, set()))
    return edits, dirs


def _with_attr(items: tuple[Attribute | Block, ...], attr: Attribute) -> tuple[Attribute | Block, ...]:
    out = [i for i in items if not (isinstance(i, Attribute) and i.name == attr.name)]
    index = next((n for n, i in enumerate(items) if isinstance(i, Attribute) and i.name == attr.name), None)
    out.insert(index if index is not None else len(out), attr)
    return tuple(out)


def _requirement_value(old: JsonValue, provider: Provider, aliases: set[str], naming: Naming) -> JsonValue:
    value: dict[str, JsonValue] = dict(old) if isinstance(old, dict) else {}
    if isinstance(old, str):
        value["version"] = old
    value.setdefault("source", _source(provider, naming))
    if aliases:
        existing = value.get("configuration_aliases")
        current = [a for a in existing if isinstance(a, str)] if isinstance(existing, list) else []
        merged: list[JsonValue] = [*current, *sorted(a for a in aliases if a not in current)]
        value["configuration_aliases"] = merged
    return value


def _apply_requirements(module: Module, edits: _Edits, naming: Naming, at: Range) -> Module:
    if not edits.requirements:
        return module
    pending = dict(edits.requirements)
    blocks = list(module.blocks)
    for n, block in enumerate(blocks):
        if block.type != "terraform":
            continue
        items = list(block.body.items)
        for m, nested in enumerate(items):
            if not isinstance(nested, Block) or nested.type != "required_providers":
                continue
            entries = nested.body.items
            for attr in nested.body.attributes:
                if attr.name in pending:
                    provider, aliases = pending.pop(attr.name)
                    value = _requirement_value(attr.value, provider, aliases, naming)
                    entries = _with_attr(entries, replace(attr, expr=Expr(value, attr.expr.range)))
            items[m] = replace(nested, body=Body(entries, nested.body.range))
        blocks[n] = replace(block, body=Body(tuple(items), block.body.range))
    if pending:
        new_attrs = tuple(
            Attribute(name, Expr(_requirement_value(None, p, a, naming), at), at)
            for name, (p, a) in sorted(pending.items())
        )
        for n, block in enumerate(blocks):
            if block.type != "terraform":
                continue
            for m, nested in enumerate(block.body.items):
                if isinstance(nested, Block) and nested.type == "required_providers":
                    body = Body((*nested.body.items, *new_attrs), nested.body.range)
                    items = list(block.body.items)
                    items[m] = replace(nested, body=body)
                    blocks[n] = replace(block, body=Body(tuple(items), block.body.range))
                    break
            else:
                continue
            break
        else:
            req_block = Block("required_providers", (), Body(new_attrs), at)
            terraform_at = next((n for n, b in enumerate(blocks) if b.type == "terraform"), None)
            if terraform_at is None:
                blocks.insert(0, Block("terraform", (), Body((req_block,)), at))
            else:
                block = blocks[terraform_at]
                blocks[terraform_at] = replace(
                    block, body=Body((*block.body.items, req_block), block.body.range)
                )
    return replace(module, blocks=tuple(blocks))


def _apply(module: Module, edits: _Edits, naming: Naming) -> Module:
    at = module.blocks[0].range if module.blocks else Range.point(module.directory + "/main.tf")
    blocks: list[Block] = []
    for block in module.blocks:
        if block.type == "provider" and block.labels:
            alias = block.body.attribute("alias")
            key = block.labels[0] + (
                f".{alias.value}" if alias is not None and isinstance(alias.value, str) else ""
            )
            if key in edits.drop_blocks:
                continue
        if block.type == "module" and block.labels and block.labels[0] in edits.passes:
            old = block.body.attribute("providers")
            value: dict[str, JsonValue] = (
                dict(old.value) if old is not None and isinstance(old.value, dict) else {}
            )
            for child_key, parent_ref in edits.passes[block.labels[0]].items():
                value.setdefault(child_key, parent_ref)
            attr = Attribute("providers", Expr(dict(sorted(value.items())), block.range), block.range)
            if old is not None:
                attr = replace(old, expr=Expr(dict(sorted(value.items())), old.expr.range))
            block = replace(block, body=Body(_with_attr(block.body.items, attr), block.body.range))
        blocks.append(block)
    return _apply_requirements(replace(module, blocks=tuple(blocks)), edits, naming, at)


def _signature(wiring: ProviderWiring) -> Iterator[tuple[str, str | None]]:
    for res in wiring.resources():
        config = res.config
        yield res.address, str(config) if config is not None else None


def make_explicit(
    graph: ModuleGraph, wiring: ProviderWiring, *, options: Options
) -> tuple[RewrittenGraph, Diagnostics]:
    """Return ``graph`` with every used implicit inheritance written as an explicit ``providers`` item.

    The rewritten graph is wired again; if any resource would use a different configuration the
    original graph's modules are kept and an error diagnostic says which resource differs.
    """
    naming = Naming(options.dialect)
    edits, dirs = _plan(graph, wiring, naming)
    modules: dict[str, Module] = {}
    for node in graph.walk():
        modules[node.address] = _apply(node.module, edits[dirs[node.path]], naming)
    rewritten = RewrittenGraph(graph, modules)
    again, _ = wire_providers(rewritten, options=options, validate=False)
    diags = Diagnostics()
    before, after = dict(_signature(wiring)), dict(_signature(again))
    for address in sorted(before):
        if before[address] != after.get(address):
            diags.error(
                "Explicit provider rewrite changed the wiring",
                f"With explicit providers maps, {address} would use {after.get(address)} instead of "
                f"{before[address]}. flatten keeps the configuration as written; please report this.",
            )
    if diags.has_errors:
        return RewrittenGraph(graph, {}), diags
    return rewritten, diags
