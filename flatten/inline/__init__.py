"""``build --inline``: module calls merged into their callers, with ``moved`` blocks so state follows.

Rule for the whole file: calls are inlined deepest first, each into its caller (``_step.py``), so
the root ends up holding every module that could be inlined. A call stays a call, with its reason
reported, when its ``count`` or ``for_each`` is not literal (or it has OpenTofu's
``lifecycle.enabled``), when its module configures providers itself, or when inlining it would
not be exact (an unreadable expression, a block type inlining does not handle, a provider
configuration the caller cannot name). Every managed resource and kept call that changes address
gets one ``moved`` block from its original address straight to its final one; the provider
configuration each resource uses is checked to be the same after inlining (spec §4.2) and an
error is reported if it is not.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from flatten.lang.blocks import top_schema
from flatten.lang.diagnostics import Diagnostic, Diagnostics
from flatten.lang.model import Attribute, Block, Body, Expr, JsonValue, Module, Range, module_address
from flatten.lang.options import Options
from flatten.providers import ConfigAddr, ConfigRef, How, ProviderWiring, wire_providers
from flatten.providers.addresses import Naming, parse_config_ref
from flatten.stages.emit import dumps, module_json
from flatten.stages.graph import ModuleCall, ModuleGraph, ModuleNode
from flatten.stages.layout import UserRules, copy_boundary, module_copies, named_files
from flatten.syntax.references import ExpressionError, Reference, hcl_string

from ._addresses import Moves, move_address, split_address
from ._count import MAX_INSTANCES, Instances, for_instance, literal_count, literal_for_each, split_call
from ._providers import ProviderNames, instance_of
from ._rewrite import Scope, rewrite_block
from ._step import NO_JOURNAL, Context, Journal, Work, inline_call, settle

__all__ = ["InlineResult", "KeptCall", "inline_graph", "move_address", "split_address"]


@dataclass(frozen=True, slots=True)
class KeptCall:
    """A module call that stays a call: its original address, why, and where it is written."""

    address: str
    reason: str
    range: Range | None = None
    module: str = ""  # the caller's original address

    def __str__(self) -> str:
        return f"{self.address}: {self.reason}"


@dataclass(frozen=True, slots=True)
class InlineResult:
    """What inlining produced.

    ``graph`` is ready for ``layout_tree``; ``copies`` are extra files for the output tree (files
    of inlined modules that read ``path.module``, by path relative to the root module: pass them
    to ``layout_tree`` as ``beside_root``); ``moves`` are the ``(from, to)``
    address pairs of every ``moved`` block written, outermost module first; ``inlined`` and
    ``kept`` list original call addresses. ``renames`` adds the data and ephemeral resources,
    which are renamed but not moved (they have no state).
    """

    graph: ModuleGraph
    inlined: tuple[str, ...] = ()
    kept: tuple[KeptCall, ...] = ()
    moves: tuple[tuple[str, str], ...] = ()
    renames: tuple[tuple[str, str], ...] = ()
    copies: Mapping[str, Path] = field(default_factory=dict)
    variants: Mapping[str, int] = field(default_factory=dict)  # for layout_tree: see _variants

    def new_address(self, address: str) -> str:
        """Return where an original resource, data source or module address is after inlining."""
        return move_address(address, self.renames)

    def manifest(self) -> list[JsonValue]:
        """Return the manifest's ``inlined`` list: each inlined call and what replaced its address.

        An inlined call has no address in the output, so ``-target``/``-exclude`` with its
        address (or one inside it) matches nothing there. Each entry gives the call's original
        ``module`` address, ``to``: every address that came from it (what ``-target=<module>``
        becomes), and ``addresses``: each original address inside it and its new one.
        """
        calls = set(self.inlined)
        inside: dict[str, dict[str, str]] = {call: {} for call in self.inlined}
        for old, new in self.renames:
            steps = split_address(old) or []
            prefix = ""
            for step, _key in steps[:-1]:
                prefix = f"{prefix}.{step}" if prefix else step
                if prefix in calls:
                    inside[prefix][old] = new
        out: list[JsonValue] = []
        for call in self.inlined:
            moved = inside[call]
            # The outermost addresses only: a kept call's own resources move with it.
            tops = sorted(new for old, new in moved.items() if not _under_any(old, moved))
            addresses: dict[str, JsonValue] = dict(sorted(moved.items()))
            out.append({"module": call, "to": list(tops), "addresses": addresses})
        return out


def _under_any(address: str, others: Mapping[str, str]) -> bool:
    """Whether ``address`` is inside another address of ``others`` (a module call's)."""
    steps = split_address(address) or []
    prefix = ""
    for step, key in steps[:-1]:
        prefix = f"{prefix}.{step}{key}" if prefix else f"{step}{key}"
        if prefix in others:
            return True
    return False


def _module_dir(root: Path) -> Callable[[ModuleNode], str]:
    # One answer per directory: a module called thousands of times is resolved once (resolving
    # is a stat per path component).
    seen: dict[Path, str] = {}
    real_root = root.resolve()

    def module_dir(node: ModuleNode) -> str:
        if node.package is None and node.directory is not None and node.directory in seen:
            return seen[node.directory]
        found = _dir_of(node)
        if node.package is None and node.directory is not None:
            seen[node.directory] = found
        return found

    def _dir_of(node: ModuleNode) -> str:
        # The directory layout.py vendors a module to (without its collision numbering).
        if node.package is not None:
            base = "modules/_remote/" + node.package.name
            return posixpath.join(base, node.package.subdir) if node.package.subdir else base
        assert node.directory is not None
        # Terraform's own value (symlinks resolved, relative to the root), which is also where the
        # layout keeps the module's files relative to the root module, inside the root or out.
        real = Path(os.path.relpath(node.directory.resolve(), real_root)).as_posix()
        return real if real != "." else "modules/_root"

    return module_dir


def _files(
    options: Options, root: Path, warnings: dict[str, Diagnostic]
) -> Callable[[ModuleNode, str], dict[str, Path]]:
    # The same walk the output layout uses, so an inlined module carries exactly the files (and
    # refuses exactly the escaping or looping symlinks, and leaves out what .terraformignore and
    # --exclude keep out) it would carry as a vendored module, and the files its configuration
    # names through path.module that the walk leaves out (state snapshots, hidden files), which
    # the plain build copies too (stages/pathreads.py). ``warnings`` collects, once each, the
    # plain build's warnings about a named file the user excluded.
    rules = UserRules(root.resolve(), options.exclude)
    root_rules = rules.at(root.resolve())
    seen: dict[tuple[Path, str], dict[str, Path]] = {}

    def files(node: ModuleNode, dest: str) -> dict[str, Path]:
        if node.directory is None:
            return {}
        key = (node.directory, dest)
        if key in seen:  # a module called many times is walked once
            return seen[key]
        boundary = copy_boundary(node, root)
        left_out = rules.at(node.directory.resolve())
        # An inlined module is never laid out, so its refused symlinks are left out without a warning.
        found = module_copies(
            node.directory,
            dest,
            dialect=options.dialect,
            is_root=False,
            boundary=boundary,
            skipped=[],
            left_out=left_out,
        )
        named = named_files(node, dest, root, "", boundary, found, left_out, root_rules, options)
        for rel, path in named.copies.items():
            found.setdefault(rel, path)
        for d in named.diagnostics:
            warnings.setdefault(d.detail, d)
        seen[key] = found
        return found

    return files


def _initial(ctx: Context, wiring: ProviderWiring, node: ModuleNode) -> Work:
    targets: dict[tuple[str, str, str], ConfigAddr | None] = {}
    instances: dict[tuple[str, str, str], str] = {}
    mw = ctx.names.module_at(node.path)
    for res in mw.resources if mw is not None else ():
        if res.decl.mode in ("managed", "data", "ephemeral"):
            key = (res.decl.mode, res.decl.type, res.decl.name)
            targets[key] = res.config
            instance = res.ref.key if res.ref.key is not None else instance_of(res.binding)
            if instance is not None:
                instances[key] = instance
    for check in node.module.blocks_of("check"):
        for data in check.body.blocks_of("data"):
            if len(data.labels) != 2:
                continue
            attr = data.body.attribute("provider")
            try:
                ref = (
                    parse_config_ref(attr.value)
                    if attr is not None
                    else ConfigRef(data.labels[0].split("_")[0])
                )
            except ValueError:
                continue
            targets[("data", data.labels[0], data.labels[1])] = ctx.names.resolve(node.path, ref, node.module)
    return Work(node, node.module, targets, instances=instances)


def _ineligible(ctx: Context, wiring: ProviderWiring, call: ModuleCall, child: ModuleNode) -> str | None:
    body = call.block.body
    for_each = body.attribute("for_each")
    if for_each is not None:
        keyed = literal_for_each(for_each.value)
        if keyed is None:
            return (
                "its for_each is not a set of string literals or an object of constants, so which "
                "instances exist is known only at plan time"
            )
        if len(keyed.keys) > MAX_INSTANCES:
            return f"its for_each has more than {MAX_INSTANCES} instances"
    count = body.attribute("count")
    if count is not None:
        n = literal_count(count.value)
        if n is None:
            return "its count is not a literal number, so which instances exist is known only at plan time"
        if n > MAX_INSTANCES:
            return f"its count is more than {MAX_INSTANCES}"
    for lifecycle in body.blocks_of("lifecycle"):
        if lifecycle.body.attribute("enabled") is not None:
            return "it uses lifecycle.enabled"
    mw = ctx.names.module_at(child.path)
    own = sorted(b.key for b in (mw.own if mw is not None else ()) if b.how is How.OWN)
    if own:
        return (
            "the module configures providers itself (" + ", ".join(own) + "); its resources would need "
            "those configurations moved into the caller"
        )
    return None


class _Walk:
    def __init__(
        self,
        ctx: Context,
        graph: ModuleGraph,
        wiring: ProviderWiring,
        only: str | None,
        exclude: frozenset[str] = frozenset(),
    ) -> None:
        self.ctx, self.graph, self.wiring, self.only = ctx, graph, wiring, only
        self.exclude = exclude  # calls the check after inlining found would change the wiring
        self.inlined: list[str] = []
        self.kept: list[KeptCall] = []
        self.found_only = only is None

    def process(self, node: ModuleNode) -> Work:
        work = _initial(self.ctx, self.wiring, node)
        for call in node.calls:
            address = module_address((*node.path, call.name))
            if address not in self.graph:
                continue  # not loaded: the build stopped with an error before this
            child_node = self.graph.node(address)
            child = self.process(child_node)
            selected = self.only is None or address == self.only
            self.found_only = self.found_only or address == self.only
            reason = _ineligible(self.ctx, self.wiring, call, child_node) if selected else None
            if selected and reason is None and address in self.exclude:
                reason = (
                    "inlining it would change which provider configuration a resource uses, or what a "
                    "call that stays a call is given (the check after inlining)"
                )
            if selected and reason is None:
                result = self.inline(work, call, child)
                if isinstance(result, Work):
                    work = result
                    self.inlined.append(address)
                    continue
                reason = result
            work.kept[call.name] = child
            if reason is not None:
                self.kept.append(KeptCall(address, reason, call.block.range, node.address))
        return settle(self.ctx, work)

    def inline(self, work: Work, call: ModuleCall, child: Work) -> Work | str:
        count = call.block.body.attribute("count")
        for_each = call.block.body.attribute("for_each")
        if count is None and for_each is None:
            return inline_call(self.ctx, work, call.name, child)
        # A literal count or for_each: one plain call per instance, each inlined (_count.py).
        n = literal_count(count.value) if count is not None else None
        each = Instances.counted(n) if n is not None else None
        if for_each is not None:
            each = literal_for_each(for_each.value)
        assert each is not None  # _ineligible refused any other count or for_each
        # In place, each change journaled: when one instance cannot be inlined, all are undone.
        journal = Journal(work)
        work.journal = journal
        try:
            instances = split_call(self.ctx, work, call.name, each)
            for i, (name, origin) in enumerate(instances):
                result = inline_call(self.ctx, work, name, for_instance(child, each, i), origin)
                if isinstance(result, str):
                    journal.rollback()
                    return result
        finally:
            work.journal = NO_JOURNAL
        return work


def _note_block(notes: Mapping[str, str], at: Range) -> Block | None:
    if not notes:
        return None
    text = "Inlined module variables: " + "; ".join(f"local.{k}: {v}" for k, v in sorted(notes.items()))
    return Block("locals", (), Body((Attribute("//", Expr(text, at), at),)), at)


def _last_step(address: str) -> str:
    steps = split_address(address)
    return steps[-1][0] if steps else address


def _movable(address: str) -> bool:
    return not address.startswith(("data.", "ephemeral."))


def _finish(work: Work, is_root: bool) -> Module:
    at = work.module.blocks[0].range if work.module.blocks else Range.point("main.tf")
    blocks = list(work.module.blocks)
    pairs = sorted(work.origins.items(), key=lambda kv: kv[1])
    for current, origin in pairs:
        if _movable(current):
            body = Body((Attribute("from", Expr(origin, at), at), Attribute("to", Expr(current, at), at)))
            blocks.append(Block("moved", (), body, at))
    note = _note_block(work.notes, at)
    if note is not None:
        blocks.append(note)
    if is_root:
        # Import blocks (root only) name their target by its address: follow it to the new one.
        rel = Moves([(o, c) for c, o in pairs])
        out: list[Block] = []
        for b in blocks:
            to = b.body.attribute("to")
            if b.type == "import" and to is not None and isinstance(to.value, str):
                new = rel.apply(to.value)
                if new != to.value:
                    items = tuple(
                        replace(i, expr=Expr(new, to.expr.range)) if i is to else i for i in b.body.items
                    )
                    b = replace(b, body=Body(items, b.body.range))
            out.append(b)
        blocks = out
    return Module(work.module.directory, tuple(blocks), work.module.files)


def _assemble(
    root: Work,
) -> tuple[ModuleGraph, list[tuple[str, str]], dict[str, Path], list[tuple[Work, ModuleNode]]]:
    nodes: dict[str, ModuleNode] = {}
    kids: dict[str, list[str]] = {}
    moves: list[tuple[str, str]] = []
    copies: dict[str, Path] = {}
    placed: list[tuple[Work, ModuleNode]] = []

    def emit(work: Work, path: tuple[str, ...], call: ModuleCall | None) -> None:
        module = _finish(work, not path)
        address = module_address(path)
        prefix = address + "." if address else ""
        moves.extend((prefix + o, prefix + c) for c, o in sorted(work.origins.items(), key=lambda kv: kv[1]))
        copies.update(work.copies)
        calls: list[tuple[ModuleCall, Work]] = []
        for name, kept in sorted(work.kept.items()):
            block = next((b for b in module.blocks_of("module") if b.labels and b.labels[0] == name), None)
            original = kept.node.call
            if block is None or original is None:
                continue
            calls.append((ModuleCall(name, block, original.source, original.address, original.version), kept))
        node = ModuleNode(
            path, module, work.node.directory, call, tuple(c for c, _ in calls), work.node.package
        )
        nodes[address] = node
        placed.append((work, node))
        kids[address] = []
        for mc, kept in calls:
            kids[address].append(module_address((*path, mc.name)))
            emit(kept, (*path, mc.name), mc)

    emit(root, (), None)
    return ModuleGraph.from_nodes(nodes, kids), moves, copies, placed


def _config_key(config: ConfigAddr | None, moves: Moves) -> str | None:
    if config is None:
        return None
    module = moves.apply(config.module_address) if config.module else ""
    text = str(ConfigAddr((), config.provider, config.alias))
    return f"{module}.{text}" if module else text


def _inside(address: str, call: str) -> bool:
    """Whether an original address is the call ``call`` or inside it (any instance)."""
    steps = split_address(address) or []
    prefix = ""
    for step, _key in steps:
        prefix = f"{prefix}.{step}" if prefix else step
        if prefix == call:
            return True
    return False


def _check(
    wiring: ProviderWiring, graph: ModuleGraph, moves: list[tuple[str, str]], options: Options
) -> tuple[Diagnostics, set[str]]:
    """Return the check's errors and the original addresses they are about (module or resource)."""
    diags = Diagnostics()
    culprits: set[str] = set()
    back = Moves([(to, frm) for frm, to in reversed(moves)])
    product = options.dialect.product  # "OpenTofu" in the opentofu dialect (lang/dialect.py)
    # The same validation the plain build runs (Terraform's validateProviderConfigs): a call that
    # stayed a call must still get every configuration its module needs, by a name it declares.
    # The original passed it (the build stops before inlining otherwise), so any error is new.
    again, checked = wire_providers(graph, options=options)
    for d in checked.errors:
        if d.module:
            culprits.add(back.apply(d.module))
        diags.append(
            Diagnostic.error(
                "Inlining changed the provider wiring",
                f"After inlining, {product} would reject the output: {d.summary}: {d.detail} "
                "flatten does not emit it. Inline fewer calls (--module), or none; please report this.",
                d.range,
                module=d.module,
            )
        )
    after = {r.address: r.config for r in again.resources() if r.decl.mode != "import"}
    mover = Moves(moves)
    for res in wiring.resources():
        if res.decl.mode == "import":
            continue
        new = mover.apply(res.address)
        before_key, after_key = (
            _config_key(res.config, mover),
            (str(after[new]) if after.get(new) is not None else None),
        )
        if new in after and before_key != after_key:
            culprits.add(res.address)
            diags.error(
                "Inlining changed the provider wiring",
                f"After inlining, {new} (originally {res.address}) would use {after_key} instead of "
                f"{before_key}. flatten does not emit a configuration that changes which provider "
                "configuration a resource uses; please report this.",
            )
    return diags, culprits


def _variants(placed: list[tuple[Work, ModuleNode]]) -> dict[str, int]:
    """Return, by address, which copy of its directory each module is written as (1 is left out).

    Inlining can change the calls of one module directory differently (different kept calls,
    different arguments inlined into a child). Each distinct result is written once: the first,
    in the output's fixed order, as the directory itself, the next as ``<dir>__2``, and so on. A
    module's result includes which copy each of its calls points at, so children count first.
    """
    variant: dict[str, int] = {}
    texts: dict[Path, list[str]] = {}
    by_address = {node.address: node for _, node in placed}
    for address in sorted(by_address, key=lambda a: (-a.count("module."), a)):
        node = by_address[address]
        if node.directory is None or not node.path:
            continue
        kids = sorted((c.name, variant.get(module_address((*node.path, c.name)), 1)) for c in node.calls)
        text = dumps(module_json(node.module)) + repr(kids)
        seen = texts.setdefault(node.directory.resolve(), [])
        if text not in seen:
            seen.append(text)
        variant[address] = seen.index(text) + 1
    # Numbers follow first appearance in the output's order, not the deepest-first walk above.
    order: dict[Path, dict[int, int]] = {}
    for _, node in placed:
        if node.directory is None or not node.path:
            continue
        renumber = order.setdefault(node.directory.resolve(), {})
        renumber.setdefault(variant[node.address], len(renumber) + 1)
    return {
        node.address: order[node.directory.resolve()][variant[node.address]]
        for _, node in placed
        if node.directory is not None
        and node.path
        and order[node.directory.resolve()][variant[node.address]] > 1
    }


def _pin_path_module(
    graph: ModuleGraph, variants: Mapping[str, int], ctx: Context
) -> tuple[ModuleGraph, Diagnostics]:
    """Return ``graph`` with ``path.module`` in every extra copy (``<dir>__2``) written as the plain path.

    A copy is its directory's module written a second time; ``path.module`` there would name the
    copy, while the original (and the plain build) gives the directory's own vendored path. The
    copy's files are the same, so the plain path reads the same files.
    """
    diags = Diagnostics()
    if not variants:
        return graph, diags
    nodes: dict[str, ModuleNode] = {}
    kids: dict[str, list[str]] = {}
    for node in graph.walk():
        kids[node.address] = [c.address for c in graph.children(node.address)]
        if node.address not in variants or node.directory is None:
            nodes[node.address] = node
            continue
        plain = hcl_string(ctx.module_dir(node))

        def pin(ref: Reference, text: str, plain: str = plain) -> str | None:
            return plain + ref.tail(text, 1) if ref.root == "path" and ref.name(1) == "module" else None

        scope = Scope(pin)
        try:
            blocks = tuple(
                rewrite_block(b, ctx.schema.blocks[b.type], scope) if b.type in ctx.schema.blocks else b
                for b in node.module.blocks
            )
        except ExpressionError as exc:
            diags.error(
                "Inlined module differs between calls",
                f"{node.address} is written as a second copy of its module directory, because inlining "
                f"changed its calls differently, and its path.module could not be kept ({exc}). Inline "
                "none of the calls of this directory, or fix the expression.",
                node.call.range if node.call is not None else None,
            )
            continue
        nodes[node.address] = replace(node, module=replace(node.module, blocks=blocks))
    return ModuleGraph.from_nodes(nodes, kids), diags


def inline_graph(
    graph: ModuleGraph, wiring: ProviderWiring, *, options: Options, only: str | None = None
) -> tuple[InlineResult, Diagnostics]:
    """Return ``graph`` with every module call that can be inlined merged into its caller, and diagnostics.

    ``only`` (an address such as ``module.a.module.b``) inlines just that call. Each call that
    stays is a warning "Module call not inlined" (when ``only`` names it, an error); an ``only``
    that names no call is an error; a change of provider wiring is an error. On errors the result
    holds the original graph and no moves.

    >>> result, diags = inline_graph(graph, wiring, options=Options())  # doctest: +SKIP
    >>> tree = layout_tree(result.graph, root=root, options=options)  # doctest: +SKIP
    """
    naming = Naming(options.dialect)
    root_dir = graph.root.directory or Path(".")
    file_warnings: dict[str, Diagnostic] = {}
    ctx = Context(
        options,
        top_schema(options.dialect),
        ProviderNames(wiring, naming),
        _module_dir(root_dir),
        _files(options, root_dir, file_warnings),
    )
    exclude: frozenset[str] = frozenset()
    while True:
        walk = _Walk(ctx, graph, wiring, only, exclude)
        root = walk.process(graph.root)
        diags = Diagnostics()
        if not walk.found_only:
            diags.error(
                "No such module call",
                f"--module {only} names no module call in the configuration. Give the address of one "
                "call, for example module.net or module.a.module.b.",
            )
            return InlineResult(graph), diags
        new_graph, moves, copies, placed = _assemble(root)
        variants = _variants(placed)
        new_graph, pin_diags = _pin_path_module(new_graph, variants, ctx)
        checked, culprits = _check(wiring, new_graph, moves, options)
        # A call whose inlining changed the wiring stays a call (a warning), and the rest is
        # inlined again without it: one such call never fails the whole build.
        related = (a for a in walk.inlined if any(_inside(c, a) or _inside(a, c) for c in culprits))
        more = frozenset(related) - exclude
        if not checked.has_errors or not more:
            break
        exclude |= more
    for kept in walk.kept:
        make = Diagnostic.error if only is not None else Diagnostic.warning
        diags.append(
            make(
                "Module call not inlined",
                f"{kept.address} stays a module call because {kept.reason}.",
                kept.range,
                module=kept.module,
            )
        )
    diags.extend(pin_diags)
    diags.extend(file_warnings.values())
    diags.extend(checked)
    if diags.has_errors:
        return InlineResult(graph, kept=tuple(walk.kept)), diags
    return (
        InlineResult(
            new_graph,
            tuple(walk.inlined),
            tuple(walk.kept),
            tuple((a, b) for a, b in moves if _movable(_last_step(a))),
            tuple(moves),
            dict(sorted(copies.items())),
            variants,
        ),
        diags,
    )
