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

Terraform lists a cycle's nodes in Go map order, which changes from run to run; flatten sorts
them, and adds what Terraform does not: a detail that walks one loop of the cycle reference by
reference, and the range of the first reference on that loop.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass

import networkx as nx

from flatten.lang.diagnostics import Diagnostic, Diagnostics
from flatten.lang.dialect import Dialect
from flatten.lang.model import Block, Body, JsonValue, Range
from flatten.lang.terraform_releases import NEWEST, accepts
from flatten.stages.graph import ModuleGraph, ModuleNode, module_address
from flatten.syntax.dynamic import dynamic_iterators
from flatten.syntax.references import ExpressionError, Reference, Scans, expression_references

__all__ = ["CycleGraph", "ProviderUse", "check_cycles"]

# Roots that name no graph node: bound by the evaluation context, or objects the graph does not
# reach through references (ParseRef gives them other subjects).
_NO_NODE = frozenset(
    {"count", "each", "self", "path", "terraform", "tofu", "action", "list", "run", "resource", "template"}
)
_LIFECYCLE_SKIP = frozenset({"ignore_changes", "create_before_destroy", "action_trigger"})
_SHOWN_STEPS = 8  # steps of the loop the detail spells out before it says how many more


@dataclass(frozen=True, slots=True)
class ProviderUse:
    """Which provider configuration a resource uses, as provider wiring resolved it.

    ``resource`` and ``config`` are node names (``module.a.aws_instance.x``,
    ``module.a.provider["registry.terraform.io/hashicorp/aws"].west``); ``module`` and ``key``
    say where the configuration's ``provider`` block is (``key``: its local ``name[.alias]``;
    empty for a configuration without a block).
    """

    resource: str
    config: str
    module: tuple[str, ...]
    key: str


@dataclass(frozen=True, slots=True)
class _Why:
    """Why one node depends on another: the reference (its text and where it is), or a rule."""

    text: str
    range: Range | None = None


@dataclass(frozen=True, slots=True)
class _Ref:
    """A reference made by ``node``, to be resolved in module ``scope``."""

    node: int
    scope: tuple[str, ...]
    key: str  # what it names, in the form of the reference map (``module.a.x``, ``var.y``)
    fallback: str  # what to look up when ``key`` names nothing (``module.a`` for an output)
    text: str  # the reference as written (explaining only)
    range: Range | None


def _prefixed(path: tuple[str, ...], name: str) -> str:
    prefix = module_address(path)
    return f"{prefix}.{name}" if prefix else name


def _label(block: Block, k: int) -> str:
    return block.labels[k] if len(block.labels) > k else ""


def _reference_key(ref: Reference) -> tuple[str, str] | None:
    """``(key, fallback)`` of a reference in the reference map; None when no node can answer it."""
    root = ref.root
    names = [step[1] if step[0] == "attr" else None for step in ref.steps]
    if root in _NO_NODE or not names:
        return None
    if root in ("var", "local"):
        return (f"{root}.{names[0]}", "") if names[0] else None
    if root == "module":
        call = names[0]
        if call is None:
            return None
        rest = ref.steps[1:]
        if rest and rest[0][0] == "index":
            rest = rest[1:]
        whole = f"module.{call}"
        if rest and rest[0][0] == "attr":
            return f"{whole}.{rest[0][1]}", whole
        return whole, ""
    if root in ("data", "ephemeral"):
        if len(names) < 2 or names[0] is None or names[1] is None:
            return None
        return f"{root}.{names[0]}.{names[1]}", ""
    if names[0] is None:
        return None
    return f"{root}.{names[0]}", ""


class _Builder:
    """Nodes, where each is answered from, and the references to resolve once all are known.

    Nodes are numbered and edges kept as lists of numbers; with ``explain``, each edge also keeps
    why it is there (``_Why``), which only a graph with a cycle needs (it is built again then).
    """

    def __init__(self, dialect: Dialect, release: tuple[int, int], *, explain: bool = False) -> None:
        self.dialect = dialect
        self.validation_nodes = dialect.allows("terraform_releases") and accepts(
            release, "variable_validation_nodes"
        )
        self.explain = explain
        self.ids: dict[str, int] = {}
        self.names: list[str] = []
        self.out: list[list[int]] = []  # node -> the nodes it depends on
        self.members: dict[tuple[str, ...], list[int]] = {}  # module -> the nodes that belong to it
        self.whys: dict[tuple[int, int], _Why] = {}  # with explain only
        self.answers: dict[tuple[tuple[str, ...], str], list[int]] = {}  # (scope, key) -> nodes
        self.refs: list[_Ref] = []
        self.scans = Scans()  # the current module's templates (shared with the walk's checks)

    def _id(self, name: str) -> int:
        found = self.ids.get(name)
        if found is None:
            found = self.ids[name] = len(self.names)
            self.names.append(name)
            self.out.append([])
        return found

    def node(self, name: str, module: tuple[str, ...]) -> str:
        self.members.setdefault(module, []).append(self._id(name))
        return name

    def answer(self, scope: tuple[str, ...], key: str, node: str) -> None:
        self.answers.setdefault((scope, key), []).append(self._id(node))

    def edge(self, source: str, target: str, why: str, *names: str, rng: Range | None = None) -> None:
        """``source`` depends on ``target``; ``why`` is the reason's wording (``str.format`` of
        ``names``), put together only when explaining."""
        self.link(self._id(source), self._id(target), why, names, rng)

    def link(self, s: int, t: int, why: str, names: tuple[str, ...], rng: Range | None) -> None:
        if s == t:
            return
        self.out[s].append(t)
        if self.explain and (s, t) not in self.whys:
            self.whys[s, t] = _Why(why.format(*names), rng)

    # -- references ----------------------------------------------------------------------------
    def value(
        self, node: str, scope: tuple[str, ...], value: JsonValue, rng: Range | None, bound: frozenset[str]
    ) -> None:
        """The references of an expression value (strings are templates; keys too)."""
        stack: list[JsonValue] = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                try:
                    found = self.scans.references(item, bound)
                except ExpressionError:
                    continue
                self._add(node, scope, item, found, rng)
            elif isinstance(item, list):
                stack.extend(reversed(item))
            elif isinstance(item, dict):
                for key, val in item.items():
                    stack.append(val)
                    stack.append(key)

    def sources(
        self, node: str, scope: tuple[str, ...], items: JsonValue, rng: Range | None, *, after: str = ""
    ) -> None:
        """The references of bare expression source strings (``depends_on``,
        ``replace_triggered_by``); with ``after``, only those after its first occurrence (the
        instance key of an OpenTofu ``providers`` item)."""
        for item in items if isinstance(items, list) else [items]:
            if not isinstance(item, str):
                continue
            text = item.removeprefix("${").removesuffix("}") if item.startswith("${") else item
            try:
                found = expression_references(text)
            except ExpressionError:
                continue
            if after:
                cut = text.find(after)
                if cut < 0:
                    continue
                found = [r for r in found if r.start > cut]
            self._add(node, scope, text, found, rng)

    def _add(
        self, node: str, scope: tuple[str, ...], text: str, found: list[Reference], rng: Range | None
    ) -> None:
        for ref in found:
            key = _reference_key(ref)
            if key is not None:
                said = text[ref.start : ref.end] if self.explain else ""
                self.refs.append(_Ref(self._id(node), scope, key[0], key[1], said, rng))

    def body(
        self, node: str, scope: tuple[str, ...], body: Body, bound: frozenset[str], skip: frozenset[str]
    ) -> None:
        """Every expression of a resource-like body and its nested blocks, native or JSON."""
        for attr in body.attributes:
            if attr.name in skip:
                continue
            if attr.name == "depends_on":
                self.sources(node, scope, attr.value, attr.expr.range)
            elif attr.name == "lifecycle" and isinstance(attr.value, dict):
                self.lifecycle(node, scope, attr.value, attr.expr.range, bound)
            elif attr.name == "provisioner":
                self.value(node, scope, _without_destroy_provisioners(attr.value), attr.expr.range, bound)
            else:
                self.value(node, scope, attr.value, attr.expr.range, bound)
        for block in body.blocks:
            if block.type == "lifecycle":
                for attr in block.body.attributes:
                    self.lifecycle(node, scope, {attr.name: attr.value}, attr.expr.range, bound)
                for nested in block.body.blocks:
                    if nested.type != "action_trigger":
                        self.body(node, scope, nested.body, bound, frozenset())
            elif block.type == "provisioner":
                when = block.body.attribute("when")
                if when is not None and _destroys(when.value):
                    continue  # destroy-time provisioners refer to nothing (NodeAbstractResource)
                self.body(node, scope, block.body, bound, frozenset({"when", "on_failure"}))
            elif block.type == "dynamic":
                self.body(node, scope, block.body, bound, frozenset({"iterator"}))
            else:
                self.body(node, scope, block.body, bound, frozenset())

    def lifecycle(
        self,
        node: str,
        scope: tuple[str, ...],
        items: dict[str, JsonValue],
        rng: Range | None,
        bound: frozenset[str],
    ) -> None:
        """A ``lifecycle`` block's arguments: ``replace_triggered_by`` items are bare expressions;
        ``ignore_changes`` and the literals refer to nothing."""
        for key, item in items.items():
            if key == "replace_triggered_by":
                self.sources(node, scope, item, rng)
            elif key not in _LIFECYCLE_SKIP:
                self.value(node, scope, item, rng, bound)

    def resolve(self) -> None:
        for ref in self.refs:
            targets = self.answers.get((ref.scope, ref.key))
            if targets is None and ref.fallback:
                targets = self.answers.get((ref.scope, ref.fallback))
            where = f" ({_at(ref.range)})" if self.explain and ref.range is not None else ""
            for target in targets or ():
                self.link(
                    ref.node,
                    target,
                    "{0} refers to {1}{2}",
                    (self.names[ref.node], ref.text, where),
                    ref.range,
                )

    def has_cycle(self) -> bool:
        """Whether some node depends on itself (Kahn's algorithm leaves nodes unvisited)."""
        pending = [0] * len(self.out)
        for targets in self.out:
            for t in targets:
                pending[t] += 1
        ready = [n for n, count in enumerate(pending) if count == 0]
        seen = 0
        while ready:
            n = ready.pop()
            seen += 1
            for t in self.out[n]:
                pending[t] -= 1
                if pending[t] == 0:
                    ready.append(t)
        return seen < len(self.out)

    def digraph(self) -> nx.DiGraph:
        """The graph by node name, each edge with its reason (``explain`` only)."""
        g = nx.DiGraph()
        g.add_nodes_from(self.names)
        for s, targets in enumerate(self.out):
            for t in targets:
                g.add_edge(self.names[s], self.names[t], why=self.whys[s, t])
        return g


def _without_destroy_provisioners(value: JsonValue) -> JsonValue:
    """A JSON ``provisioner`` property without its destroy-time provisioners."""
    kept: list[JsonValue] = []
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, dict):
            item = {k: v for k, v in item.items() if not (isinstance(v, dict) and _destroys(v.get("when")))}
        kept.append(item)
    return kept


def _destroys(when: JsonValue) -> bool:
    return isinstance(when, str) and "destroy" in when


def _at(rng: Range) -> str:
    return f"{rng.filename}:{rng.start.line}"


def _module_nodes(
    b: _Builder, node: ModuleNode, call_block: Block | None, uses: Mapping[str, ProviderUse]
) -> None:
    """Add the nodes of one module, their references, and the answers they give; ``call_block``
    is the ``module`` block calling it (None for the root)."""
    path = node.path
    module = node.module
    parent = path[:-1]
    for block in module.blocks:
        body = block.body.peek()
        kind = block.type
        if kind == "variable" and block.labels:
            name = block.labels[0]
            if path:
                var = b.node(_prefixed(path, b.dialect.word("graph_module_variable", name=name)), path)
                if call_block is not None:
                    arg = call_block.body.attribute(name)
                    if arg is not None:
                        b.value(var, parent, arg.value, arg.expr.range, frozenset())
            else:
                var = b.node(f"var.{name}", path)
            b.answer(path, f"var.{name}", var)
            rules = list(body.blocks_of("validation"))
            if rules and b.validation_nodes:
                check = b.node(_prefixed(path, f"var.{name} (validation)"), path)
                b.edge(check, var, "{0} checks the value of {1}", check, var)
                b.answer(path, f"var.{name}", check)
                for rule in rules:
                    for attr in rule.body.attributes:
                        b.value(check, path, attr.value, attr.expr.range, frozenset())
        elif kind == "locals":
            for attr in body.attributes:
                local = b.node(_prefixed(path, f"local.{attr.name} (expand)"), path)
                b.answer(path, f"local.{attr.name}", local)
                b.value(local, path, attr.value, attr.expr.range, frozenset())
        elif kind == "output" and block.labels:
            name = block.labels[0]
            out = b.node(_prefixed(path, f"output.{name} (expand)"), path)
            if path:
                b.answer(parent, f"module.{path[-1]}.{name}", out)
                b.answer(parent, f"module.{path[-1]}", out)
            for attr in body.attributes:
                if attr.name == "value":
                    b.value(out, path, attr.value, attr.expr.range, frozenset())
                elif attr.name == "depends_on":
                    b.sources(out, path, attr.value, attr.expr.range)
            for pre in body.blocks_of("precondition"):
                for attr in pre.body.attributes:
                    b.value(out, path, attr.value, attr.expr.range, frozenset())
        elif kind in ("resource", "data", "ephemeral") and len(block.labels) >= 2:
            _resource(b, path, kind, block, body, uses)
        elif kind == "check" and block.labels:
            check = b.node(_prefixed(path, f"check.{block.labels[0]} (expand)"), path)
            for nested in body.blocks:
                if nested.type == "data" and len(nested.labels) >= 2:
                    _resource(b, path, "data", nested, nested.body, uses)
                elif nested.type == "assert":
                    for attr in nested.body.attributes:
                        b.value(check, path, attr.value, attr.expr.range, frozenset())
        elif kind == "import" and not path:
            # ImportReferences: always resolved in the root, made by the imported resource.
            _import(b, body)
    if path:
        _call_nodes(b, node, call_block)


def _resource(
    b: _Builder, path: tuple[str, ...], kind: str, block: Block, body: Body, uses: Mapping[str, ProviderUse]
) -> None:
    local = f"{_label(block, 0)}.{_label(block, 1)}"
    key = local if kind == "resource" else f"{kind}.{local}"
    name = b.node(_prefixed(path, key), path)
    b.answer(path, key, name)
    b.body(name, path, body, dynamic_iterators(body), frozenset({"provider"}))
    use = uses.get(name)
    if use is not None:
        b.edge(name, use.config, "{0} uses the provider configuration {1}", name, use.config)


def _import(b: _Builder, body: Body) -> None:
    to = body.attribute("to")
    if to is None or not isinstance(to.value, str):
        return
    target = _strip_keys(to.value)
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


def _call_nodes(b: _Builder, node: ModuleNode, call_block: Block | None) -> None:
    """The expand and close nodes of the call to ``node``, and what the expand node refers to."""
    path = node.path
    parent = path[:-1]
    address = node.address
    expand = b.node(f"{address} (expand)", path)
    close = b.node(f"{address} (close)", path)
    b.answer(parent, f"module.{path[-1]}", close)
    if parent:
        holder = f"{module_address(parent)} (expand)"
        b.edge(expand, holder, "{0} waits for {1}, the module holding the call", expand, holder)
    if call_block is None:
        return
    body = call_block.body.peek()
    for attr in body.attributes:
        if attr.name in ("count", "for_each"):
            b.value(expand, parent, attr.value, attr.expr.range, frozenset())
        elif attr.name == "depends_on":
            b.sources(expand, parent, attr.value, attr.expr.range)
        elif attr.name == "providers" and b.dialect.allows("provider_instance_keys"):
            # nodeExpandModule.References (OpenTofu): a passed instance's key expression.
            value = attr.value
            keys = (
                [item for item in value.values() if isinstance(item, str)] if isinstance(value, dict) else []
            )
            for item in keys:
                b.sources(expand, parent, item, attr.expr.range, after="[")


def _membership(b: _Builder, graph: ModuleGraph) -> None:
    """ModuleExpansionTransformer: nodes wait for their module's expansion; closers for them."""
    for node in graph.walk():
        path = node.path
        if not path or node.address in graph.dropped:
            continue
        address = node.address
        expand, close = f"{address} (expand)", f"{address} (close)"
        e, c = b.ids[expand], b.ids[close]
        for member in b.members.get(path, ()):
            if member != e and member != c:
                name = b.names[member]
                b.link(member, e, "{0} waits for {1} to be expanded", (name, address), None)
                b.link(c, member, "{0} waits for everything in {1}", (close, address), None)
        b.edge(close, expand, "{0} waits for everything in {1}", close, address)
        for k in range(1, len(path)):
            above = f"{module_address(path[:k])} (close)"
            b.edge(above, close, "{0} waits for the modules it calls", above)


def _providers(b: _Builder, graph: ModuleGraph, uses: Mapping[str, ProviderUse]) -> None:
    """The provider configurations resources use, with what their blocks refer to."""
    seen: set[str] = set()
    for use in sorted(uses.values(), key=lambda u: u.config):
        if use.config in seen:
            continue
        seen.add(use.config)
        b.node(use.config, use.module)
        block = _provider_block(graph, use) if use.key else None
        if block is None:
            continue
        skip = {"alias", "version"}
        body = block.body.peek()
        for attr in body.attributes:
            if attr.name not in skip:
                b.value(use.config, use.module, attr.value, attr.expr.range, frozenset())
        for nested in body.blocks:
            b.body(use.config, use.module, nested.body, frozenset(), frozenset())


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


def _loop(g: nx.DiGraph, component: list[str]) -> list[tuple[str, str]]:
    """One shortest loop through the component's first node: the edges, in order."""
    sub = g.subgraph(component)
    start = component[0]
    best: list[str] | None = None
    for pred in sorted(sub.predecessors(start)):
        path: list[str] = nx.shortest_path(sub, start, pred)
        if best is None or len(path) < len(best):
            best = path
    assert best is not None  # a strongly connected component of two or more nodes
    nodes = [*best, start]
    return list(itertools.pairwise(nodes))


def _diagnostic(g: nx.DiGraph, component: list[str]) -> Diagnostic:
    loop = _loop(g, component)
    whys: list[_Why] = [g.edges[a, z]["why"] for a, z in loop]
    lines = [f"  {why.text}" for why in whys[:_SHOWN_STEPS]]
    if len(whys) > _SHOWN_STEPS:
        lines.append(f"  ... and {len(whys) - _SHOWN_STEPS} more steps back to {component[0]}")
    detail = (
        "Each object in the cycle must wait for itself through the others, so there is no "
        "order to evaluate them in. One loop of it:\n"
        + "\n".join(lines)
        + "\nRemove or change one of these references (a depends_on item, or an expression "
        "that reads another object) to break the cycle."
    )
    rng = next((why.range for why in whys if why.range is not None), None)
    return Diagnostic.error("Cycle: " + ", ".join(component), detail, rng)


class CycleGraph:
    """The graph ``validate`` builds, one module at a time (``module``, callers first), and its
    cycles once every module is in (``finish``).

    ``uses``: each resource's provider configuration, by the resource's node name.
    """

    def __init__(
        self,
        graph: ModuleGraph,
        uses: Mapping[str, ProviderUse],
        dialect: Dialect = Dialect.TERRAFORM,
        release: tuple[int, int] = NEWEST,
        *,
        explain: bool = False,
    ) -> None:
        self.graph = graph
        self.uses = uses
        self.dialect = dialect
        self.release = release
        self.builder = _Builder(dialect, release, explain=explain)
        self.call_blocks: dict[str, Block] = {}  # each call's block, by the called module's address

    def module(self, node: ModuleNode, scans: Scans | None = None) -> None:
        """Add one module's nodes; ``scans``: its templates as another check scanned them."""
        if node.address in self.graph.dropped:
            return
        b = self.builder
        b.scans = scans if scans is not None else Scans()
        for block in node.module.blocks_of("module"):
            if block.labels:
                self.call_blocks[module_address((*node.path, block.labels[0]))] = block
        _module_nodes(b, node, self.call_blocks.get(node.address) if node.path else None, self.uses)
        b.scans = Scans()

    def finish(self) -> Diagnostics:
        """One "Cycle: ..." error per cycle of the graph, sorted; none when it has no cycle."""
        b = self.builder
        _providers(b, self.graph, self.uses)
        _membership(b, self.graph)
        b.resolve()
        diags = Diagnostics()
        # Most graphs have no cycle: they are checked with numbers only, and one with a cycle is
        # built again with the reasons its detail needs.
        if not b.has_cycle():
            return diags
        again = CycleGraph(self.graph, self.uses, self.dialect, self.release, explain=True)
        for node in self.graph.walk():
            again.module(node)
        b = again.builder
        _providers(b, self.graph, self.uses)
        _membership(b, self.graph)
        b.resolve()
        g = b.digraph()
        components = sorted(
            sorted(component) for component in nx.strongly_connected_components(g) if len(component) > 1
        )
        for component in components:
            diags.append(_diagnostic(g, component))
        return diags


def check_cycles(
    graph: ModuleGraph,
    uses: Mapping[str, ProviderUse],
    dialect: Dialect = Dialect.TERRAFORM,
    release: tuple[int, int] = NEWEST,
) -> Diagnostics:
    """Return one "Cycle: ..." error per cycle in the graph ``validate`` builds for ``graph``
    (``CycleGraph`` over the whole tree)."""
    cycles = CycleGraph(graph, uses, dialect, release)
    for node in graph.walk():
        cycles.module(node)
    return cycles.finish()
