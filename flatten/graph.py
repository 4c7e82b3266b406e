"""The module graph: one node per module path, built by following module calls from the root.

This is the only module that imports networkx; later stages walk the graph through
``ModuleGraph``'s methods (``walk``, ``children``, ``ancestors``). A node is a module *path*
(``module.a.module.b``), not an expanded instance: ``count``/``for_each`` stay on the call.

Loading follows the contract of ``tofu init`` plus the config builder (conformance README, spec
§4.5 and §5): the root is loaded and its calls decoded first; if that produced an error nothing
else is loaded. Otherwise calls are followed in name order, local sources are resolved against
the calling module's directory (symlinks followed), and an error in one child does not stop its
siblings. Recursion through local sources is reported as a cycle instead of being followed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol, runtime_checkable

import networkx as nx

from flatten.diagnostics import Diagnostic, Diagnostics
from flatten.files import list_config_files
from flatten.load import display_path, load_dir
from flatten.merge import merge_module
from flatten.model import Block, Module, Range
from flatten.options import Dialect, Options
from flatten.sources import (
    InvalidSourceAddress,
    LocalSource,
    RegistrySource,
    RemoteSource,
    SourceAddress,
    join_subdir,
    parse_module_source,
)
from flatten.sources.package import FetchedModule, ModulePackage

__all__ = [
    "ModuleCall",
    "ModuleFetcher",
    "ModuleGraph",
    "ModuleNode",
    "PrefetchingFetcher",
    "build_graph",
    "module_address",
]

_IDENT_START = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")


def module_address(path: Sequence[str]) -> str:
    """Return the module address for a path of call names: ``module.a.module.b`` ("" for the root)."""
    return ".".join(f"module.{name}" for name in path)


@dataclass(frozen=True, slots=True)
class ModuleCall:
    """A ``module`` block, statically decoded: its name, source and version."""

    name: str
    block: Block
    source: str
    address: SourceAddress
    version: str | None

    @property
    def range(self) -> Range:
        attr = self.block.body.attribute("source")
        return attr.expr.range if attr is not None else self.block.range


@dataclass(frozen=True, slots=True)
class ModuleNode:
    """One module path in the tree: the merged module, where it was loaded from, and its call."""

    path: tuple[str, ...]
    module: Module
    directory: Path | None  # absolute; None when the source could not be resolved
    call: ModuleCall | None  # None for the root
    calls: tuple[ModuleCall, ...] = ()  # this module's own decoded calls, in name order
    package: ModulePackage | None = None  # the remote package holding the module (None: the root's)

    @property
    def address(self) -> str:
        return module_address(self.path)


class ModuleFetcher(Protocol):
    """Resolves a registry or remote source to a directory on disk (``flatten.sources.fetcher``).

    A fetcher may return a bare directory (test stand-ins) or a ``FetchedModule``, whose package
    makes local sources inside it resolve within the package (spec §5.7).
    """

    def fetch(
        self, call: ModuleCall, *, parent: ModuleNode
    ) -> tuple[Path | FetchedModule | None, Diagnostics]: ...


@runtime_checkable
class PrefetchingFetcher(Protocol):
    """A fetcher that can resolve all the calls of one module at once (in parallel) before ``fetch``."""

    def prefetch(self, calls: Sequence[ModuleCall], *, parent: ModuleNode) -> None: ...


class ModuleGraph:
    """A directed graph of module paths: an edge from each caller to each module it calls."""

    def __init__(self, graph: nx.DiGraph) -> None:
        self._graph = graph

    @property
    def root(self) -> ModuleNode:
        return self.node("")

    def node(self, address: str) -> ModuleNode:
        node: ModuleNode = self._graph.nodes[address]["node"]
        return node

    def __contains__(self, address: object) -> bool:
        return address in self._graph

    def __len__(self) -> int:
        return int(self._graph.number_of_nodes())

    def children(self, address: str) -> list[ModuleNode]:
        """Return the modules ``address`` calls, in call-name order."""
        kids = [self.node(a) for a in self._graph.successors(address)]
        return sorted(kids, key=lambda n: n.path[-1])

    def parent(self, address: str) -> ModuleNode | None:
        preds = list(self._graph.predecessors(address))
        return self.node(preds[0]) if preds else None

    def ancestors(self, address: str) -> list[ModuleNode]:
        """Return the modules above ``address``, root first."""
        out: list[ModuleNode] = []
        parent = self.parent(address)
        while parent is not None:
            out.append(parent)
            parent = self.parent(parent.address)
        return out[::-1]

    def walk(self) -> Iterator[ModuleNode]:
        """Yield every module, depth first, parents before children, children in name order."""
        stack = [self.root]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(self.children(node.address)))

    def edges(self) -> list[tuple[str, str]]:
        return sorted((a, b) for a, b in self._graph.edges)


def _literal(value: object) -> str | None:
    """Return a source/version string as the engine reads it, or None when it is not static."""
    if not isinstance(value, str):
        return None
    return value


def _decode_calls(module: Module, *, options: Options) -> tuple[list[ModuleCall], Diagnostics]:
    diags = Diagnostics()
    calls: list[ModuleCall] = []
    tofu = options.dialect is Dialect.OPENTOFU
    for block in module.blocks_of("module"):
        name = block.labels[0] if block.labels else ""
        if not name or name[0] not in _IDENT_START or not all(c.isalnum() or c in "_-" for c in name):
            diags.error(
                "Invalid module instance name",
                "A name must start with a letter or underscore and may contain only letters, digits, "
                "underscores, and dashes.",
                block.label_ranges[0] if block.label_ranges else block.range,
            )
            continue
        source_attr = block.body.attribute("source")
        if source_attr is None:
            diags.error(
                "Missing required argument",
                'The argument "source" is required, but no definition was found.',
                block.range,
            )
            continue
        raw = _literal(source_attr.value)
        version_attr = block.body.attribute("version")
        version = _literal(version_attr.value) if version_attr is not None else None
        if tofu and raw is not None:
            raw, version = _static_template(raw), _static_template(version)
        if raw is None or (version_attr is not None and version is None):
            bad = source_attr if raw is None else version_attr
            assert bad is not None
            diags.error(
                "Unsupported module source expression" if raw is None else "Invalid version constraint",
                "The module source and version must be literal strings that flatten can read without "
                "evaluating expressions. Write the value as a plain string.",
                bad.expr.range,
            )
            continue
        try:
            address = parse_module_source(raw, has_version=version is not None, dialect=options.dialect.value)
        except InvalidSourceAddress as exc:
            diags.error(exc.summary, str(exc), source_attr.expr.range)
            continue
        calls.append(ModuleCall(name, block, raw, address, version))
    calls.sort(key=lambda c: c.name)
    return calls, diags


def _static_template(value: str | None) -> str | None:
    # OpenTofu reads source/version as templates evaluated statically; flatten can read the ones
    # without interpolation (their only escape is $${ / %%{).
    if value is None:
        return None
    if "${" in value.replace("$${", "") or "%{" in value.replace("%%{", ""):
        return None
    return value.replace("$${", "${").replace("%%{", "%{")


def _outside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return True
    return False


def _display(directory: Path, root: Path, package: ModulePackage | None = None) -> str:
    """Return how messages name a module directory: relative to the root, or by package address."""
    if package is not None and _outside(directory, root):
        return package.source
    return display_path(directory, root)


def _load(
    directory: Path, *, root: Path, options: Options, address: str, package: ModulePackage | None = None
) -> tuple[Module, Diagnostics]:
    # A module from a downloaded package (outside the root, in the cache) is named by its package:
    # file names become "<package address>//<path in the package>", never a machine's cache path.
    outside = package is not None and _outside(directory, root)
    base = package.root if outside and package is not None else root
    files, diags = load_dir(directory, root=base, options=options)
    module, merge_diags = merge_module(files, directory=display_path(directory, base), options=options)
    diags.extend(merge_diags)
    if outside and package is not None:
        prefix = package.address.partition("?")[0]
        diags = Diagnostics(
            replace(d, range=replace(d.range, filename=f"{prefix}//{d.range.filename}")) if d.range else d
            for d in diags
        )
    if address:
        diags = Diagnostics(replace(d, module=address) for d in diags)
    return module, diags


def _child_checks(node: ModuleNode, *, options: Options) -> Diagnostics:
    """Diagnostics a module gets only because it is not the root (spec §4.5)."""
    diags = Diagnostics()
    for block in node.module.blocks_of("terraform"):
        for nested in block.body.blocks_of("backend"):
            diags.append(
                Diagnostic.warning(
                    "Backend configuration ignored",
                    "Any selected backend applies to the entire configuration, so OpenTofu expects "
                    "provider configurations only in the root module.\n\nThis is a warning rather than "
                    "an error because it's sometimes convenient to temporarily call a root module as a "
                    "child module for testing purposes, but this backend configuration block will have "
                    "no effect.",
                    nested.range,
                )
            )
        if options.dialect is Dialect.TERRAFORM:
            for nested in block.body.blocks_of("cloud"):
                diags.warning(
                    "Cloud configuration ignored",
                    "A cloud configuration block applies to the entire configuration, so it has no "
                    "effect in a child module.",
                    nested.range,
                )
    if options.dialect is Dialect.OPENTOFU:
        for block in node.module.blocks_of("import"):
            diags.error(
                "Invalid import configuration",
                f"An import block was detected in {node.address}. Import blocks are only allowed in "
                "the root module.",
                block.range,
            )
    return Diagnostics(replace(d, module=node.address) for d in diags)


def _has_config(directory: Path, options: Options) -> bool:
    try:
        return bool(list_config_files(directory, dialect=options.dialect).files)
    except OSError:
        return False


def build_graph(
    root: Path, *, options: Options, fetcher: ModuleFetcher | None = None
) -> tuple[ModuleGraph, Diagnostics]:
    """Return the module graph rooted at ``root`` and every diagnostic of loading it.

    The graph always has the root node. Children are loaded only when the root loaded without
    errors; a child whose source cannot be resolved or read is left out, with a diagnostic at
    the calling block's ``source``.

    Registry and remote sources go to ``fetcher`` (``flatten.sources.fetcher.RemoteFetcher``).
    Without one, only modules that ``terraform init`` already installed (``.terraform/modules``)
    are found, and any other remote module is a "Module not installed" error.
    """
    root = root.absolute()
    if fetcher is None:
        from flatten.sources.fetcher import installed_only

        fetcher = installed_only(root, options=options)
    graph: nx.DiGraph = nx.DiGraph()
    module, diags = _load(root, root=root, options=options, address="")
    calls, call_diags = _decode_calls(module, options=options)
    diags.extend(call_diags)
    root_node = ModuleNode((), module, root, None, tuple(calls))
    graph.add_node("", node=root_node)
    if diags.has_errors:
        return ModuleGraph(graph), diags

    # Depth first, in call-name order, so diagnostics come out in a stable order.
    stack: list[tuple[ModuleNode, tuple[Path, ...]]] = [(root_node, (root.resolve(),))]
    while stack:
        parent, chain = stack.pop()
        children: list[tuple[ModuleNode, tuple[Path, ...]]] = []
        if isinstance(fetcher, PrefetchingFetcher):
            fetcher.prefetch(parent.calls, parent=parent)
        for call in parent.calls:
            path = (*parent.path, call.name)
            address = module_address(path)
            directory, package, fetch_diags = _resolve(call, parent, root=root, fetcher=fetcher)
            diags.extend(replace(d, module=parent.address) for d in fetch_diags)
            if directory is None:
                continue
            real = directory.resolve()
            if real in chain:
                cycle = " -> ".join([*(_display(p, root) for p in chain), _display(real, root)])
                diags.append(
                    Diagnostic.error(
                        "Module call cycle",
                        f'Module "{call.name}" calls {call.source}, which is already being loaded higher '
                        f"up the tree ({cycle}). A module cannot call itself directly or through other "
                        "modules; remove the cycle.",
                        call.range,
                        module=parent.address,
                    )
                )
                continue
            if not _has_config(directory, options):
                diags.append(
                    Diagnostic.warning(
                        "Empty module directory",
                        f"The directory {_display(directory, root, package)} of module "
                        f'"{call.name}" holds no '
                        ".tf or .tf.json files, so the module declares nothing. Terraform accepts it; "
                        "check that the source points where you meant.",
                        call.range,
                        module=parent.address,
                    )
                )
            module, load_diags = _load(
                directory, root=root, options=options, address=address, package=package
            )
            diags.extend(load_diags)
            calls, call_diags = _decode_calls(module, options=options)
            diags.extend(replace(d, module=address) for d in call_diags)
            node = ModuleNode(path, module, directory, call, tuple(calls), package)
            diags.extend(_child_checks(node, options=options))
            graph.add_node(address, node=node)
            graph.add_edge(parent.address, address, call=call.name)
            children.append((node, (*chain, real)))
        stack.extend(reversed(children))
    return ModuleGraph(graph), diags


def _resolve(
    call: ModuleCall, parent: ModuleNode, *, root: Path, fetcher: ModuleFetcher
) -> tuple[Path | None, ModulePackage | None, Diagnostics]:
    diags = Diagnostics()
    if isinstance(call.address, LocalSource):
        if parent.directory is None:
            return None, None, diags
        package = parent.package
        if package is not None:
            # Inside a remote package a local source moves within the package and may not leave it.
            try:
                subdir = join_subdir(
                    package.subdir,
                    call.address.path,
                    package=package.address,
                    module=module_address((*parent.path, call.name)),
                )
            except InvalidSourceAddress as exc:
                diags.error(exc.summary, str(exc), call.range)
                return None, None, diags
            package = package.at(subdir)
            directory = package.directory
        else:
            directory = Path(os.path.normpath(parent.directory / call.address.path))
        if not directory.is_dir():
            diags.error(
                "Unreadable module directory",
                f"The directory {_display(directory, root, package)} does not exist or cannot be read.",
                call.range,
            )
            return None, None, diags
        return directory, package, diags
    assert isinstance(call.address, (RegistrySource, RemoteSource))
    found, fetch_diags = fetcher.fetch(call, parent=parent)
    if isinstance(found, FetchedModule):
        return found.directory, found.package, fetch_diags
    return found, None, fetch_diags
