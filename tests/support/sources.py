"""Remote-source helpers: a source environment in the test's directory, the graph-and-layout run
``flatten build`` does with a real fetcher, and small module-call texts."""

from __future__ import annotations

from pathlib import Path

from flatten.lang.diagnostics import Diagnostics
from flatten.lang.options import Options
from flatten.shell import cache_auth
from flatten.sources.env import SourceEnv
from flatten.sources.fetcher import RemoteFetcher, read_lock
from flatten.stages.graph import ModuleGraph, build_graph
from flatten.stages.layout import OutputTree, layout_tree


def source_env(tmp_path: Path, **kw: object) -> SourceEnv:
    return SourceEnv(cache_dir=tmp_path / "cache", **kw)  # type: ignore[arg-type]


def run(
    root: Path, env: SourceEnv, options: Options | None = None, lock: bytes | None = None
) -> tuple[ModuleGraph, OutputTree | None, Diagnostics]:
    options = options or Options()
    fetcher = RemoteFetcher(root, options=options, env=env, cache_auth=cache_auth, lock=read_lock(lock))
    graph, diags = build_graph(root, options=options, fetcher=fetcher)
    if diags.has_errors:
        return graph, None, diags
    return graph, layout_tree(graph, root=root, options=options), diags


def summaries(diags: Diagnostics) -> list[str]:
    return [d.summary for d in diags]


def call(name: str, source: str, version: str | None = None) -> str:
    v = f'  version = "{version}"\n' if version else ""
    return f'module "{name}" {{\n  source = "{source}"\n{v}}}\n'
