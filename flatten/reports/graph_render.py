"""``flatten graph``: the module tree as text, Graphviz dot, Mermaid or JSON.

Every format lists the same facts for each module path: its address, the source it was called
with, the directory it loads, and the call's meta-arguments. Output is sorted the way
``ModuleGraph.walk`` sorts, so it is stable across runs.
"""

from __future__ import annotations

import json
from pathlib import Path

from flatten.lang.model import JsonValue
from flatten.lang.printable import printable
from flatten.lang.redact import redact_url
from flatten.reports import GraphFormat
from flatten.stages.emit import dumps
from flatten.stages.graph import ModuleGraph, ModuleNode
from flatten.stages.load import display_path

__all__ = ["GraphFormat", "render_graph"]

_META = ("count", "for_each", "depends_on", "providers")


def _meta(node: ModuleNode) -> dict[str, JsonValue]:
    if node.call is None:
        return {}
    out: dict[str, JsonValue] = {}
    for name in _META:
        attr = node.call.block.body.attribute(name)
        if attr is not None:
            out[name] = attr.value
    return out


def _facts(node: ModuleNode, root: Path) -> dict[str, JsonValue]:
    return {
        "address": node.address or "(root)",
        "source": redact_url(node.call.source) if node.call is not None else ".",  # no credentials
        "directory": display_path(node.directory, root) if node.directory is not None else None,
        **_meta(node),
    }


def _shown(node: ModuleNode, root: Path) -> dict[str, JsonValue]:
    """The facts of ``node`` for a text format: names from outside made safe (lang/printable.py)."""
    return {k: printable(v) if isinstance(v, str) else v for k, v in _facts(node, root).items()}


def _text(graph: ModuleGraph, root: Path) -> str:
    lines: list[str] = []

    def visit(node: ModuleNode, prefix: str, last: bool, top: bool) -> None:
        facts = _shown(node, root)
        meta = " ".join(f"[{k}]" for k in _META if k in facts)
        label = f"{facts['address']}  {facts['source']}" + (f"  {meta}" if meta else "")
        if top:
            lines.append(f"{label}  ({facts['directory']})")
            child_prefix = ""
        else:
            lines.append(prefix + ("└── " if last else "├── ") + label)
            child_prefix = prefix + ("    " if last else "│   ")
        kids = graph.children(node.address)
        for i, kid in enumerate(kids):
            visit(kid, child_prefix, i == len(kids) - 1, False)

    visit(graph.root, "", True, True)
    return "\n".join(lines) + "\n"


def _dot(graph: ModuleGraph, root: Path) -> str:
    lines = ["digraph modules {", "  rankdir=LR;", "  node [shape=box];"]
    for node in graph.walk():
        facts = _shown(node, root)
        label = json.dumps(f"{facts['address']}\n{facts['source']}")  # dot reads \n as a line break
        lines.append(f"  {json.dumps(node.address or 'root')} [label={label}];")
    for parent, child in graph.edges():
        meta = _meta(graph.node(child))
        attrs = f' [label="{",".join(k for k in meta)}"]' if meta else ""
        lines.append(f"  {json.dumps(parent or 'root')} -> {json.dumps(child)}{attrs};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _mermaid(graph: ModuleGraph, root: Path) -> str:
    ids = {node.address: f"m{i}" for i, node in enumerate(graph.walk())}
    lines = ["graph TD"]
    for node in graph.walk():
        facts = _shown(node, root)
        text = f"{facts['address']}<br/>{facts['source']}".replace('"', "#quot;")
        lines.append(f'  {ids[node.address]}["{text}"]')
    for parent, child in graph.edges():
        meta = _meta(graph.node(child))
        arrow = f"-->|{','.join(meta)}|" if meta else "-->"
        lines.append(f"  {ids[parent]} {arrow} {ids[child]}")
    return "\n".join(lines) + "\n"


def _json(graph: ModuleGraph, root: Path) -> str:
    def tree(node: ModuleNode) -> dict[str, JsonValue]:
        facts = _facts(node, root)
        facts["address"] = node.address
        facts["children"] = [tree(kid) for kid in graph.children(node.address)]
        return facts

    return dumps(tree(graph.root))


def render_graph(graph: ModuleGraph, fmt: GraphFormat, *, root: Path) -> str:
    """Return the module tree in ``fmt`` (text, dot, mermaid or json)."""
    renderers = {
        GraphFormat.TEXT: _text,
        GraphFormat.DOT: _dot,
        GraphFormat.MERMAID: _mermaid,
        GraphFormat.JSON: _json,
    }
    return renderers[fmt](graph, root.absolute())
