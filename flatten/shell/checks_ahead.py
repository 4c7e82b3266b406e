"""Parts of the checks computed ahead, by prefetch's workers, where each module is loaded.

A cold build's validate-level checks (flatten/providers/checks.py) are a part per module, each a
function of its ``CheckKey``, computed after the graph is built. There each module's blocks were
decoded again from the entry prefetch's worker had pickled, each part computed in one of two
processes and pickled between them, and written after: on the command line the checks cost about
twice their CPU in one process, 0.45 s of flat 200's cold build and 0.9 s of hier 200's
(docs/performance.md, "Eighth round"). The worker that loads a module has its bodies decoded, and
for a module that calls none, everything its part is a function of is known there: its own
files, its path in the tree and its caller's call block (the caller was loaded a level before),
and its children's output names, which are none. So that worker computes the part with the
module (``leaf_part``), and the build takes it by its key (``build_cache.keep_checked``).

What prefetch learns of the tree as it goes level by level is kept in ``Ahead``: each
directory's paths in the tree with the memo key of the module calling it there, and the modules
this process computed that call others (a level's workers are forked after the level before is
done, so they inherit both, and the entries the other workers computed, ``build_cache.MEMO``).
A part computed for a path or a caller the build's graph does not have is keyed by nobody's key:
it is never taken, and costs a cache entry.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flatten.lang.model import Block, Module
    from flatten.lang.options import Options
    from flatten.shell.build_cache import ModuleEntry
    from flatten.stages.text_facts import TextFacts

__all__ = ["Ahead", "named_calls"]

# Where a module directory is called: its path in the tree (call names from the root) and the
# memo key of the module calling it there ("" for the root).
Context = tuple[tuple[str, ...], str]


def named_calls(module: Module) -> tuple[tuple[str, str], ...]:
    """The module calls of ``module`` with a literal source: (call name, source) each."""
    out = []
    for block in module.blocks_of("module"):
        attr = block.body.attribute("source")
        if block.labels and attr is not None and isinstance(attr.value, str):
            out.append((block.labels[0], attr.value))
    return tuple(out)


class Ahead:
    """What prefetch knows of the tree for the parts it computes ahead, one level at a time."""

    def __init__(self, root: Path, options: Options) -> None:
        self.on = options.graph_checks()  # --checks init: no part is ever asked for
        self.contexts: dict[str, list[Context]] = {str(root): [((), "")]}
        # Modules computed in this process that call others, loaded without a diagnostic, by
        # memo key; a worker adds those it decodes from ``build_cache.MEMO`` to its own copy.
        self.callers: dict[str, Module | None] = {}
        # Each caller's module blocks by call name (``module_calls``), made once per caller: a
        # root calling 200 modules was searched once for each of them.
        self.calls: dict[str, dict[str, list[Block]]] = {}
        # What the parts computed in this process learnt of their texts (stages/text_facts.py):
        # the modules of a tree share most of their expressions.
        self.facts: TextFacts | None = None

    def loaded(self, key: str, directory: Path, named: Sequence[tuple[str, str]]) -> None:
        """Note the module ``key`` loaded from ``directory``, with its calls ``named`` (call name,
        source): the local ones give the directories below their paths, called by ``key``."""
        if not self.on:
            return
        paths = [path for path, _ in self.contexts.get(str(directory), ())]
        for name, source in named:
            if not source.startswith(("./", "../")):
                continue  # prefetch follows local sources only (``_next_level``)
            child = str(Path(os.path.normpath(directory / source)))
            self.contexts.setdefault(child, []).extend(((*path, name), key) for path in paths)

    def keep_caller(self, key: str, entry: ModuleEntry) -> None:
        """Keep a module computed in this process for the workers of the next level, when it
        calls others and loaded cleanly (its call blocks are what its children's parts read)."""
        if self.on and not entry.load_diags and not entry.merge_diags and named_calls(entry.module):
            self.callers[key] = entry.module

    def parts(
        self,
        key: str,
        entry: ModuleEntry,
        directory: Path,
        options: Options,
        named: Sequence[tuple[str, str]],
    ) -> tuple[tuple[str, bytes], ...]:
        """In a worker: the parts of the checks of the module ``key`` just loaded from
        ``directory``, at each of its paths, by digest, pickled; none for a module that calls
        others (``named``: its calls, ``named_calls``) or has a diagnostic (``leaf_part``)."""
        if not self.on or entry.load_diags or entry.merge_diags or named:
            return ()
        from flatten.shell.build_cache import check_digest
        from flatten.stages.check_parts import leaf_part, module_calls
        from flatten.stages.text_facts import TextFacts

        if self.facts is None:
            self.facts = TextFacts()
        out = []
        for path, caller_key in self.contexts.get(str(directory), ()):
            caller = self._caller(caller_key)
            if caller is None:
                continue
            calls = self.calls.get(caller_key)
            if calls is None:
                calls = self.calls[caller_key] = module_calls(caller)
            found = leaf_part(
                entry.module, key, path, caller, caller_key, options, calls.get(path[-1], ()), self.facts
            )
            if found is not None:
                check_key, part = found
                out.append((check_digest(check_key), pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL)))
        return tuple(out)

    def _caller(self, key: str) -> Module | None:
        if key in self.callers:
            return self.callers[key]
        from flatten.shell import build_cache

        data = build_cache.MEMO.get(key)
        entry = build_cache.decode(data, key) if isinstance(data, bytes) else data
        found = None if entry is None or entry.load_diags or entry.merge_diags else entry.module
        self.callers[key] = found  # this worker's copy: decoded once for all the modules it calls
        return found
