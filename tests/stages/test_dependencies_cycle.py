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
