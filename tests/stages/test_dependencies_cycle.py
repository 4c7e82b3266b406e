"""The cycle check of the graph ``validate`` builds (stages/dependencies.py ``has_cycle``), both
ways it keeps a node's targets (lists up to ``_LISTED_BYTES``, packed arrays above), against
networkx on random graphs, with and without a subset of the nodes (``only``: init's graph)."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flatten.lang.dialect import Dialect
from flatten.stages import dependencies
from flatten.stages.dependencies import Dependencies

_graphs = st.integers(min_value=1, max_value=30).flatmap(
    lambda n: st.tuples(
        st.just(n),
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=80),
        st.sets(st.integers(0, n - 1)),
    )
)


def _built(n: int, edges: list[tuple[int, int]]) -> Dependencies:
    b = Dependencies(Dialect.TERRAFORM, (1, 15))
    for k in range(n):
        assert b.number(f"n{k}") == k
    for s, t in edges:
        b.link(s, t, "", (), None)
    return b


@pytest.mark.parametrize("listed", [True, False])
@settings(max_examples=300, deadline=None)
@given(graph=_graphs)
def test_the_cycle_check_finds_what_networkx_finds(
    graph: tuple[int, list[tuple[int, int]], set[int]], listed: bool
) -> None:
    n, edges, only = graph
    want = nx.DiGraph()
    want.add_nodes_from(range(n))
    want.add_edges_from((s, t) for s, t in edges if s != t)  # an edge to itself is no link (``link``)
    sub = want.subgraph(only)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(dependencies, "_LISTED_BYTES", 1 << 40 if listed else -1)
        b = _built(n, edges)
        assert b.has_cycle() is not nx.is_directed_acyclic_graph(want)
        assert b.has_cycle(only) is not nx.is_directed_acyclic_graph(sub)


@pytest.mark.parametrize("named", [True, False])
@settings(max_examples=300, deadline=None)
@given(graph=_graphs, before=st.integers(0, 5))
def test_a_part_added_gives_the_edges_its_links_made(
    graph: tuple[int, list[tuple[int, int]], set[int]], before: int, named: bool
) -> None:
    # ``Dependencies.add`` numbers a part's nodes in the whole graph (by name, or by hash in one
    # probe each: ``_Numbers.numbers``) and renumbers its edges (``map`` when each node is a node
    # of its own there): the same nodes and edges, by name, as linking them there.
    n, edges, _ = graph
    part = Dependencies(Dialect.TERRAFORM, (1, 15), named=True)
    for k in range(n):
        part.node(f"n{k}", ("m",))
    for s, t in edges:
        part.link(s, t, "", (), None)
    whole = Dependencies(Dialect.TERRAFORM, (1, 15), named=named)
    for k in range(before):  # nodes the whole graph has already, some of them the part's too
        whole.number(f"n{2 * k}")
    ids = whole.add(part.part())
    assert ids == [whole.number(f"n{k}") for k in range(n)]  # numbered once: found again
    name = {i: f"n{k}" for k, i in enumerate(ids)}
    earlier = {whole.number(f"n{2 * k}") for k in range(before)}
    assert len(name) == n and whole.count == len(set(ids) | earlier)
    assert all(whole.declared[i] == 1 for i in ids)
    got = sorted((name[s], name[t]) for s, t in zip(whole.edge_from, whole.edge_to, strict=True))
    assert got == sorted((f"n{s}", f"n{t}") for s, t in edges if s != t)
    assert sorted(whole.members[("m",)]) == sorted(ids)
