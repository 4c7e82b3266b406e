"""The dependency graph ``validate`` builds before its walk, and the cycles Terraform reports in it.

Rule for the whole file: Terraform's and OpenTofu's ``validate`` build one graph of the whole
configuration (``PlanGraphBuilder`` for ``walkValidate``) and refuse it when it has a cycle:
``dag.AcyclicGraph.Validate`` reports each strongly connected component of more than one node as
an error "Cycle: NODE, NODE, ..." (no source range, no detail), and the walk that would report
the other ``validate`` errors never runs. The nodes and edges here are those of that graph
(hashicorp/terraform ``internal/terraform``; OpenTofu's are the same files under
``internal/tofu``), each named as ``dag.VertexName`` names it:

* one node per resource, data source (also in ``check`` blocks) and ephemeral resource
  (``NodeAbstractResource``, ``module.a.aws_instance.x``); per local value, output value and
  ``check`` block (``nodeExpandLocal``, ``nodeExpandOutput``, ``nodeExpandCheck``: ``... (expand)``);
  per root variable (``var.x``) and child-module variable (``nodeExpandModuleVariable``: the
  dialect's wording); per variable with ``validation`` rules from Terraform 1.9
  (``transform_variable_validation.go``: ``var.x (validation)``, which depends on the variable
  and answers references to it); per module call (``nodeExpandModule``/``nodeCloseModule``:
  ``module.a (expand)``, ``module.a (close)``); per provider configuration a resource uses
  (``PruneProviderTransformer`` drops unused ones);
* references (``transform_reference.go``): each node depends on what its expressions refer to,
  resolved where they are evaluated (a module variable's value and a call's ``count``,
  ``for_each`` and ``depends_on`` in the caller, an output's value in its module); ``module.a.x``
  is the output node, ``module.a`` the close node and every output node; a reference to an
  undeclared object is no edge; a node never depends on itself through a reference;
* modules (``transform_module_expansion.go``): every node of a module depends on the module's
  expand node, the close node on every node of the module and on the close nodes below it, a
  call's expand node on the expand node of the module that holds the call;
* a resource depends on the provider configuration it uses (``ProviderTransformer``); OpenTofu's
  expand node also on the references in a ``providers`` item's instance key.

How references resolve, how a cycle is named and what flatten adds to Terraform's words:
stages/dependencies.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

from flatten.lang.diagnostics import Diagnostics
from flatten.lang.dialect import Dialect
from flatten.lang.model import Block, Body, module_address
from flatten.lang.terraform_releases import NEWEST
from flatten.stages.dependencies import Dependencies, GraphPart, cycle_errors, prefixed
from flatten.stages.expressions import BlockExpressions, Expression, block_expressions
from flatten.stages.graph import ModuleGraph, ModuleNode
from flatten.stages.text_facts import TextFacts
from flatten.syntax.dynamic import dynamic_iterators
from flatten.syntax.references import Scans

__all__ = ["CycleGraph", "ModuleNodes", "ProviderUse", "ProviderUses", "check_cycles"]


class ProviderUse(NamedTuple):
    """Which provider configuration a resource uses, as provider wiring resolved it.

    ``resource`` and ``config`` are node names (``module.a.aws_instance.x``,
    ``module.a.provider["registry.terraform.io/hashicorp/aws"].west``); ``module`` and ``key``
    say where the configuration's ``provider`` block is (``key``: its local ``name[.alias]``;
    empty for a configuration without a block). A named tuple: the graph checks make one per
    resource of the tree, a third of the cost of a frozen dataclass each.
    """

    resource: str
    config: str
    module: tuple[str, ...]
    key: str


_RESOURCE_SKIP = frozenset({"provider"})  # a resource's argument that is no expression to read


def _label(block: Block, k: int) -> str:
    return block.labels[k] if len(block.labels) > k else ""


def _block(
    b: Dependencies,
    node: ModuleNode,
    call_block: Block | None,
    uses: Mapping[str, ProviderUse],
    block: Block,
    listed: BlockExpressions,
    imports: list[Body],
    call_scans: Scans,
) -> None:
    """Add the nodes of one top-level block of a module (``listed``: its expressions, as the
    validate walk reads them too) and the references they make; ``call_block`` is the ``module``
    block calling the module (None for the root), whose expressions ``call_scans`` (the caller's
    scan record) holds; the root's ``import`` blocks go to ``imports``, for when every module is
    in."""
    path = node.path
    parent = path[:-1]
    body = listed.body
    kind = block.type
    if kind == "variable" and block.labels:
        name = block.labels[0]
        if path:
            var = b.node(prefixed(path, b.dialect.word("graph_module_variable", name=name)), path)
            if call_block is not None:
                arg = call_block.body.attribute(name)
                if arg is not None:
                    own, b.scans = b.scans, call_scans  # the argument is the caller's text
                    b.attr(var, parent, arg, frozenset())
                    b.scans = own
        else:
            var = b.node(f"var.{name}", path)
        if b.validation_nodes and any(True for _ in body.blocks_of("validation")):
            check = b.node(prefixed(path, f"var.{name} (validation)"), path)
            b.edge(check, var, "{0} checks the value of {1}", check, var)
            for e in listed.expressions:  # each rule's own arguments
                if len(e.within) == 1 and e.within[0].type == "validation":
                    b.listed(check, path, e, frozenset())
    elif kind == "locals":
        for e in listed.expressions:
            if not e.within:
                local = b.node(prefixed(path, f"local.{e.attr.name} (expand)"), path)
                b.listed(local, path, e, frozenset())
    elif kind == "output" and block.labels:
        name = block.labels[0]
        out = b.node(prefixed(path, f"output.{name} (expand)"), path)
        if path:
            b.output(path, out)
        for e in listed.expressions:
            attr = e.attr
            if e.within:
                if len(e.within) == 1 and e.within[0].type == "precondition":
                    b.listed(out, path, e, frozenset())
            elif attr.name == "value":
                b.listed(out, path, e, frozenset())
            elif attr.name == "depends_on":
                b.sources(out, path, attr.value, attr.expr.range if b.explain else None)
    elif kind in ("resource", "data", "ephemeral") and len(block.labels) >= 2:
        _resource(b, path, kind, block, listed.expressions, 0, listed.bound, uses)
    elif kind == "check" and block.labels:
        check = b.node(prefixed(path, f"check.{block.labels[0]} (expand)"), path)
        for nested in body.blocks:
            inside = [e for e in listed.expressions if e.within and e.within[0] is nested]
            if nested.type == "data" and len(nested.labels) >= 2:
                _resource(b, path, "data", nested, inside, 1, dynamic_iterators(nested.body), uses)
            elif nested.type == "assert":
                for e in inside:
                    if len(e.within) == 1:
                        b.listed(check, path, e, frozenset())
    elif kind == "import" and not path:
        # ImportReferences: always resolved in the root, made by the imported resource, which
        # may be declared further down or in a module not yet added (ModuleNodes.close).
        imports.append(body)


def _resource(
    b: Dependencies,
    path: tuple[str, ...],
    kind: str,
    block: Block,
    listed: Iterable[Expression],
    depth: int,
    bound: frozenset[str],
    uses: Mapping[str, ProviderUse],
) -> None:
    """A resource's node and its references: ``listed`` its body's expressions, at ``depth``
    (1: a ``data`` block of a ``check`` block), ``bound`` the names its ``dynamic`` blocks bind."""
    local = f"{_label(block, 0)}.{_label(block, 1)}"
    key = local if kind == "resource" else f"{kind}.{local}"
    name = prefixed(path, key)
    b.resources.append(b.declare(name, path))
    b.expressions(name, path, listed, depth, _RESOURCE_SKIP, bound)
    use = uses.get(name)
    if use is not None:
        b.edge(name, use.config, "{0} uses the provider configuration {1}", name, use.config)


def _import(b: Dependencies, body: Body) -> None:
    to = body.attribute("to")
    if to is None or not isinstance(to.value, str):
        return
    target = _strip_keys(to.value)
    if not b.is_declared(target):
        return  # an import of an undeclared resource is no node's
    for attr in body.attributes:
        if attr.name in ("id", "for_each", "identity"):
            b.value(target, (), attr.value, attr.expr.range, frozenset())


def _strip_keys(address: str) -> str:
    """``module.a["x"].aws_instance.b[0]`` -> ``module.a.aws_instance.b`` (a config address)."""
    out: list[str] = []
    depth = 0
    quoted = False
    for ch in address.removeprefix("${").removesuffix("}"):
        if quoted:
            quoted = ch != '"'
            continue
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif depth:
            quoted = ch == '"'
        else:
            out.append(ch)
    return "".join(out)


def _call_nodes(b: Dependencies, node: ModuleNode, call_block: Block | None) -> None:
    """The expand and close nodes of the call to ``node``, and what the expand node refers to."""
    path = node.path
    parent = path[:-1]
    address = node.address
    expand = b.node(f"{address} (expand)", path)
    b.node(f"{address} (close)", path)
    if parent:
        holder = f"{module_address(parent)} (expand)"
        b.edge(expand, holder, "{0} waits for {1}, the module holding the call", expand, holder)
    if call_block is None:
        return
    body = call_block.body.peek()
    for attr in body.attributes:
        if attr.name in ("count", "for_each"):
            b.attr(expand, parent, attr, frozenset())
        elif attr.name == "depends_on":
            b.sources(expand, parent, attr.value, attr.expr.range if b.explain else None)
        elif attr.name == "providers" and b.dialect.allows("provider_instance_keys"):
            # nodeExpandModule.References (OpenTofu): a passed instance's key expression.
            value = attr.value
            keys = (
                [item for item in value.values() if isinstance(item, str)] if isinstance(value, dict) else []
            )
            for item in keys:
                b.sources(expand, parent, item, attr.expr.range, after="[")


def _membership(b: Dependencies, graph: ModuleGraph) -> None:
    """ModuleExpansionTransformer: nodes wait for their module's expansion; closers for them."""
    for node in graph.walk():
        path = node.path
        if not path or node.address in graph.dropped:
            continue
        address = node.address
        expand, close = f"{address} (expand)", f"{address} (close)"
        e, c = b.number(expand), b.number(close)
        for member in b.members.get(path, ()):
            if member != e and member != c:
                name = b.names[member] if b.explain else ""
                b.link(member, e, "{0} waits for {1} to be expanded", (name, address), None)
                b.link(c, member, "{0} waits for everything in {1}", (close, address), None)
        b.edge(close, expand, "{0} waits for everything in {1}", close, address)
        for k in range(1, len(path)):
            above = f"{module_address(path[:k])} (close)"
            b.edge(above, close, "{0} waits for the modules it calls", above)


def _providers(b: Dependencies, graph: ModuleGraph, configs: Iterable[ProviderUse]) -> None:
    """The provider configurations resources use (one use of each), with what their blocks
    refer to."""
    for use in sorted(configs, key=lambda u: u.config):
        b.node(use.config, use.module)
        block = _provider_block(graph, use) if use.key else None
        if block is None:
            continue
        b.scans = Scans(record=graph.node(module_address(use.module)).module.scans)
        skip = {"alias", "version"}
        listed = block_expressions(block)
        for e in listed.expressions:
            if not e.within and e.attr.name not in skip:
                b.value(use.config, use.module, e.attr.value, e.attr.expr.range, frozenset())
        # Each nested block a plain body.
        b.expressions(
            use.config, use.module, [e for e in listed.expressions if e.within], 1, frozenset(), frozenset()
        )


def _provider_block(graph: ModuleGraph, use: ProviderUse) -> Block | None:
    address = module_address(use.module)
    if address not in graph:
        return None
    name, _, alias = use.key.partition(".")
    for block in graph.node(address).module.blocks_of("provider"):
        if not block.labels or block.labels[0] != name:
            continue
        given = block.body.attribute("alias")
        given_alias = given.value if given is not None and isinstance(given.value, str) else ""
        if given_alias == alias:
            return block
    return None


class ModuleNodes:
    """One module's part of the graph, added one top-level block at a time (``block``), then
    its call's nodes (``close``)."""

    def __init__(
        self,
        b: Dependencies,
        node: ModuleNode,
        call_block: Block | None,
        uses: Mapping[str, ProviderUse],
        imports: list[Body],
        call_scans: Scans,
    ) -> None:
        self.b = b
        self.node = node
        self.call_block = call_block
        self.uses = uses
        self.imports = imports
        self.call_scans = call_scans  # the caller's scan record (the call block's expressions)

    def block(self, block: Block, scans: Scans, listed: BlockExpressions) -> None:
        """Add one block's nodes; ``scans``: the module's scan record and ``listed`` the block's
        expressions, both shared with the validate walk."""
        self.b.scans = scans
        _block(self.b, self.node, self.call_block, self.uses, block, listed, self.imports, self.call_scans)

    def close(self) -> None:
        b = self.b
        if self.node.path:
            b.scans = self.call_scans
            _call_nodes(b, self.node, self.call_block)

    def part(self) -> GraphPart:
        """The module's part, once its blocks are in and ``close`` ran (a ``part`` of ``open``)."""
        return self.b.part()


# The provider configurations a module's resources use, asked one module at a time.
ProviderUses = Callable[[tuple[str, ...]], Iterable[ProviderUse]]


class CycleGraph:
    """The graph ``validate`` builds, one module at a time (``module``, callers first), and its
    cycles once every module is in (``finish``).

    ``uses``: the provider configuration of each resource of a module (by the module's path), as
    provider wiring resolved it; asked once per module, so that a large tree's are not all kept.
    """

    def __init__(
        self,
        graph: ModuleGraph,
        uses: ProviderUses,
        dialect: Dialect = Dialect.TERRAFORM,
        release: tuple[int, int] = NEWEST,
        *,
        explain: bool = False,
        facts: TextFacts | None = None,
    ) -> None:
        self.graph = graph
        self.uses = uses
        self.dialect = dialect
        self.release = release
        self.facts = facts if facts is not None else TextFacts()  # shared by every module's part
        self.builder = Dependencies(dialect, release, explain=explain, facts=self.facts)
        self.call_blocks: dict[str, Block] = {}  # each call's block, by the called module's address
        self.call_scans: dict[str, Scans] = {}  # the caller's scan record, by the same address
        self.root_scans = Scans()  # the root module's (its import blocks)
        self.configs: dict[str, ProviderUse] = {}  # one use of each configuration, by its node name
        self.imports: list[Body] = []  # the root's import blocks

    def open(self, node: ModuleNode) -> ModuleNodes | None:
        """The nodes of one module, added block by block (``ModuleNodes``); None for a module
        left out of the configuration."""
        found = self.enter(node)
        if found is None:
            return None
        call_block, call_scans, uses = found
        return ModuleNodes(self.builder, node, call_block, uses, self.imports, call_scans)

    def enter(self, node: ModuleNode) -> tuple[Block | None, Scans, dict[str, ProviderUse]] | None:
        """Note what a module tells the graph about others (its calls' blocks, the provider
        configurations its resources use) and return its call block, the scans of the caller's
        text and its resources' provider uses; None for a module left out of the configuration."""
        if node.address in self.graph.dropped:
            return None
        scans = Scans(record=node.module.scans)
        if not node.path:
            self.root_scans = scans
        for block in node.module.blocks_of("module"):
            if block.labels:
                address = module_address((*node.path, block.labels[0]))
                self.call_blocks[address] = block
                self.call_scans[address] = scans
        uses = {use.resource: use for use in self.uses(node.path)}
        for use in uses.values():
            self.configs.setdefault(use.config, use)
        call_block = self.call_blocks.get(node.address) if node.path else None
        call_scans = self.call_scans.get(node.address, scans) if node.path else scans
        return call_block, call_scans, uses

    def part(self, node: ModuleNode, call_block: Block | None, call_scans: Scans) -> ModuleNodes:
        """The nodes of one module (``enter`` gave the call block and the caller's scans) added
        to a graph of their own, kept by name, whose ``GraphPart`` (``ModuleNodes.part``) is then
        given to ``add``. A part is a function of the module, its path, its call block (the
        caller's text), the dialect and the release, so a memo can keep it
        (flatten/providers/checks.py)."""
        own = Dependencies(self.dialect, self.release, named=True, facts=self.facts)
        # Provider uses and the root's import blocks are added with the part (``add``).
        return ModuleNodes(own, node, call_block, {}, [], call_scans)

    def add(self, node: ModuleNode, part: GraphPart, uses: dict[str, ProviderUse]) -> None:
        """Add a module's part (``part``) and the provider configurations its resources use, as
        ``open`` and its blocks would have."""
        if not node.path:
            self.imports.extend(block.body.peek() for block in node.module.blocks_of("import"))
        b = self.builder
        names = part.names()
        ids = b.add(part, names)
        if uses:
            for local in part.resources:
                use = uses.get(names[local])
                if use is not None:
                    b.link(ids[local], b.number(use.config), "", (), None)

    def module(self, node: ModuleNode) -> None:
        """Add one module's nodes."""
        nodes = self.open(node)
        if nodes is not None:
            scans = Scans(record=node.module.scans)
            for block in node.module.blocks:
                nodes.block(block, scans, block_expressions(block))
            nodes.close()

    def _complete(self) -> Dependencies:
        b = self.builder
        b.scans = self.root_scans
        for body in self.imports:
            _import(b, body)
        _providers(b, self.graph, self.configs.values())
        _membership(b, self.graph)
        b.resolve()
        return b

    def finish(self) -> Diagnostics:
        """One "Cycle: ..." error per cycle of the graph, sorted; none when it has no cycle."""
        # Most graphs have no cycle: they are checked with numbers only, and one with a cycle is
        # built again with the reasons its detail needs.
        if not self._complete().has_cycle():
            return Diagnostics()
        again = CycleGraph(self.graph, self.uses, self.dialect, self.release, explain=True)
        for node in self.graph.walk():
            again.module(node)
        return cycle_errors(again._complete())


def check_cycles(
    graph: ModuleGraph,
    uses: ProviderUses,
    dialect: Dialect = Dialect.TERRAFORM,
    release: tuple[int, int] = NEWEST,
) -> Diagnostics:
    """Return one "Cycle: ..." error per cycle in the graph ``validate`` builds for ``graph``
    (``CycleGraph`` over the whole tree)."""
    cycles = CycleGraph(graph, uses, dialect, release)
    for node in graph.walk():
        cycles.module(node)
    return cycles.finish()
