"""Inline mode in process: the pipeline ``flatten build --inline`` runs, returning the output files."""

from __future__ import annotations

from pathlib import Path

from flatten.inline import InlineResult, inline_graph
from flatten.lang.diagnostics import Diagnostics
from flatten.lang.options import Options
from flatten.providers import wire_providers
from flatten.stages.graph import build_graph
from flatten.stages.layout import layout_tree


def inline_build(
    root: Path, *, only: str | None = None
) -> tuple[InlineResult, dict[str, bytes], Diagnostics]:
    """Run the pipeline ``flatten build --inline`` runs and return the result and output files."""
    options = Options()
    graph, diags = build_graph(root, options=options)
    assert not diags.has_errors, diags
    wiring, wiring_diags = wire_providers(graph, options=options)
    diags.extend(wiring_diags)
    assert not diags.has_errors, diags
    result, inline_diags = inline_graph(graph, wiring, options=options, only=only)
    diags.extend(inline_diags)
    tree = layout_tree(
        result.graph, root=root, options=options, beside_root=result.copies, variants=result.variants
    )
    files = {rel: tree.content(rel) for rel in tree.paths()}
    return result, files, diags
