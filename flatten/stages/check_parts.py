"""One module's part of the validate-level checks: what the reference and function checks find
in its blocks, and its part of the cycle graph (flatten/providers/checks.py assembles the parts).

Its own module, apart from provider wiring: prefetch's workers compute the part of each module
that calls none where it is loaded (``leaf_part``, flatten/shell/checks_ahead.py), and the
process that forks them imports this first; importing ``flatten.providers`` too (the wiring, its
declarations and validation, none of which a part reads) was 15-25 ms more before the fork.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from flatten.lang.model import Block, Module
from flatten.lang.options import Options
from flatten.stages.cycles import CycleGraph, ModuleNodes, ProviderUse
from flatten.stages.expressions import BlockExpressions, block_expressions
from flatten.stages.graph import ModuleGraph, ModuleNode
from flatten.stages.memo import CheckKey, MemoKey, ModuleChecks
from flatten.stages.references_check import ReferenceChecks
from flatten.stages.text_facts import TextFacts
from flatten.syntax.references import Scans

__all__ = ["leaf_part", "module_calls", "module_checks", "module_part"]

# How many scans of texts outside a module's scan record its checks keep for each other
# (syntax.references ``Scans``): a bound (docs/reliability.md, "Memory").
_SCANS_KEPT = 64


class _BlockCheck(Protocol):
    """The validate walk's checker of one module (``ReferenceChecks.open``)."""

    def block(
        self, block: Block, scans: Scans | None = None, listed: BlockExpressions | None = None
    ) -> None: ...


def module_checks(node: ModuleNode, cycles: CycleGraph, walk: ReferenceChecks) -> None:
    """One module's checks, straight into the whole graph and the walk's errors."""
    nodes, checker = cycles.open(node), walk.open(node)
    _walk_blocks(node, nodes, checker)
    walk.close(checker)


def module_part(
    node: ModuleNode,
    entered: tuple[Block | None, Scans, dict[str, ProviderUse]] | None,
    cycles: CycleGraph,
    walk: ReferenceChecks,
) -> ModuleChecks:
    """One module's part of the checks, on its own (``CycleGraph.part``), for a memo to keep."""
    nodes = cycles.part(node, entered[0], entered[1]) if entered is not None else None
    checker = walk.open(node)
    _walk_blocks(node, nodes, checker)
    return ModuleChecks(tuple(checker.diags), None if nodes is None else nodes.part())


def module_calls(module: Module) -> dict[str, list[Block]]:
    """``module``'s ``module`` blocks by their first label (a block without one is no call)."""
    found: dict[str, list[Block]] = {}
    for block in module.blocks_of("module"):
        if block.labels:
            found.setdefault(block.labels[0], []).append(block)
    return found


def _walk_blocks(node: ModuleNode, nodes: ModuleNodes | None, checker: _BlockCheck) -> None:
    """Give each block of ``node``'s module to its part of the cycle graph (``nodes``, none when
    the graph checks stopped before it) and to the validate walk (``checker``)."""
    scans = Scans(limit=_SCANS_KEPT, record=node.module.scans)
    for block in node.module.blocks:
        # Both read the block's expressions from one list of them (stages/expressions.py).
        listed = block_expressions(block)
        if nodes is not None:
            nodes.block(block, scans, listed)
        checker.block(block, scans, listed)
    if nodes is not None:
        nodes.close()


def leaf_part(
    module: Module,
    key: str,
    path: tuple[str, ...],
    caller: Module,
    caller_key: str,
    options: Options,
    calls: Sequence[Block] | None = None,
    facts: TextFacts | None = None,
) -> tuple[CheckKey, ModuleChecks] | None:
    """The part of the checks of ``module`` (memo key ``key``) at ``path``, called as
    ``path[-1]`` by ``caller`` (memo key ``caller_key``), computed where it is loaded, before any
    graph is built (prefetch's workers: flatten/shell/prefetch.py), with its key; None where it
    cannot be known there.

    It is known there for a module that calls none: a part is a function of its ``CheckKey``
    (``_check_key``), whose only input from beyond the module and its caller is its children's
    output names, and such a module has none. The part is ``module_part``'s for the node the
    graph stage makes at ``path``, given the caller's call block and scan record as ``enter``
    gives them; a module or caller loaded with diagnostics (the graph's node would carry them)
    is the caller's business, never passed here. When the build's graph has no such node (the
    call is left out, the module replaced), the key is nobody's and the part goes unused.
    ``calls``: the caller's ``module`` blocks labelled ``path[-1]``, when the caller has them
    (``module_calls``: a caller of many modules is not searched once for each); ``facts``: what
    the checks of other modules learnt of their texts (stages/text_facts.py), to share.
    """
    if not path or not options.graph_checks() or any(module.blocks_of("module")):
        return None
    if calls is None:
        calls = module_calls(caller).get(path[-1], ())
    if len(calls) != 1:  # a duplicate call is an error of the caller's: its checks never run
        return None
    node = ModuleNode(path, module, None, None, memo_key=MemoKey(module, key))
    graph = ModuleGraph.from_nodes({node.address: node}, {node.address: []})
    release = options.terraform_version
    objects = options.graph_check("object_reference_checks")
    cycles = CycleGraph(graph, lambda _: (), options.dialect, release, facts=facts)
    walk = ReferenceChecks(graph, options.dialect, objects=objects, release=release, facts=facts)
    part = module_part(node, (calls[0], Scans(record=caller.scans), {}), cycles, walk)
    found = CheckKey(
        key, node.address, caller_key, path[-1], False, (), options.dialect.value, release, objects
    )
    return found, part
