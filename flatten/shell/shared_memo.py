"""The in-memory memo layer of a many-root run: each module directory loaded once for every root.

``flatten build ROOT... --out DIR`` builds many roots in one process (flatten/shell/roots.py).
Their module calls reach the same module directories (``modules/network`` called from every
environment), and every build asks its memo (flatten/stages/memo.py) for each directory's listing
and loaded module. ``SharedMemo`` answers the second and later asks from memory, and passes the
first to the memo it wraps (the disk-backed ``DiskMemo``, which reads the caches or computes).

What a loaded module is a function of (``ModuleSource``): the directory's files, the directory's
display path relative to the root, and the options. So two roots share a module when they see it
under the same display path, as roots at the same depth do (``live/prod`` and ``live/dev`` both
call ``../../modules/network``); a root at another depth names its files differently in every
range and diagnostic, and gets its own load of the directory (docs/monorepo.md). Files are
assumed not to change during the run, as prefetch assumes (flatten/shell/prefetch.py): the first
listing and the first bytes read stand for the whole run.

``preload`` walks every root's local module calls and loads each directory through the memo, so
a parent process can fill the layer before it forks the processes that build the roots: each of
them inherits the loaded modules instead of loading them again.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from flatten.lang.diagnostics import Diagnostics
from flatten.lang.model import Body, Module
from flatten.lang.options import Dialect, Options
from flatten.stages.files import DirectoryListing
from flatten.stages.memo import (
    NO_MEMO,
    CheckRequest,
    LoadedModule,
    Memo,
    MemoKey,
    ModuleChecks,
    ModuleSource,
    ParseSource,
    Raws,
)

if TYPE_CHECKING:
    from flatten.stages.graph import ModuleGraph
    from flatten.stages.layout import OutputTree

__all__ = ["SharedMemo", "preload"]

_ListingKey = tuple[str, str]  # directory, dialect
_ModuleKey = tuple[str, str, Options, tuple[tuple[str, str, bool], ...]]


class SharedMemo:
    """A memo that keeps every listing and loaded module it returns, for the other roots' builds.

    ``inner`` answers what this layer has not seen yet. Parses and output bytes pass straight to
    it: a parse is only asked for inside a module's load (kept here whole), and a module's output
    bytes depend on where the layout of each root puts the modules it calls.
    """

    __slots__ = ("_emitted", "_inner", "_listings", "_modules")

    def __init__(self, inner: Memo = NO_MEMO) -> None:
        self._inner = inner
        self._listings: dict[_ListingKey, DirectoryListing] = {}
        self._modules: dict[_ModuleKey, tuple[LoadedModule, MemoKey | None]] = {}
        self._emitted: dict[tuple[str, bool], bytes] = {}

    def parsed(
        self, source: ParseSource, compute: Callable[[], tuple[Body, Diagnostics]]
    ) -> tuple[Body, Diagnostics]:
        return self._inner.parsed(source, compute)

    def listing(
        self, directory: Path, dialect: Dialect, compute: Callable[[], DirectoryListing]
    ) -> DirectoryListing:
        key = (str(directory), dialect.value)
        found = self._listings.get(key)
        if found is None:
            # An OSError passes through uncached: the next root reports the same failure.
            found = self._listings[key] = self._inner.listing(directory, dialect, compute)
        return found

    def module(
        self, source: ModuleSource, compute: Callable[[Raws | None], LoadedModule]
    ) -> tuple[LoadedModule, MemoKey | None]:
        files = tuple((str(f.path), f.syntax, f.is_override) for f in source.listing.files)
        key = (str(source.directory), source.display, source.options, files)
        found = self._modules.get(key)
        if found is None:
            found = self._modules[key] = self._inner.module(source, compute)
        return found

    def emitted(
        self,
        key: MemoKey | None,
        original: Module,
        output: Module,
        provenance: bool,
        compute: Callable[[], bytes],
    ) -> bytes:
        if key is None or output is not original or key.module is not original:
            return self._inner.emitted(key, original, output, provenance, compute)
        # A module written as loaded (it calls no other, so no source is rewritten): the same
        # bytes in every root that loaded it under this key.
        found = self._emitted.get((key.key, provenance))
        if found is None:
            found = self._emitted[(key.key, provenance)] = self._inner.emitted(
                key, original, output, provenance, compute
            )
        return found

    def checked(self, requests: Sequence[CheckRequest]) -> list[ModuleChecks]:
        return self._inner.checked(requests)

    def later(self, compute: Callable[[], Diagnostics], *, modules: int) -> Callable[[], Diagnostics]:
        return self._inner.later(compute, modules=modules)

    def laid_out(self, graph: ModuleGraph, tree: OutputTree) -> None:
        self._inner.laid_out(graph, tree)

    @property
    def modules(self) -> int:
        """How many distinct module loads this layer holds."""
        return len(self._modules)


def preload(roots: Sequence[Path], *, options: Options, memo: SharedMemo) -> set[Path]:
    """Load every root and the module directories its local calls (``./``, ``../``) reach, through
    ``memo``; return those directories (resolved), roots included.

    A directory is loaded once per display path (see the module docstring), in a stable order:
    roots as given, then level by level. Nothing here reports anything: each root's build loads
    the same directories through the same memo and reports what they hold. Never raises for the
    configuration; a directory that cannot be read is left to the build.
    """
    from flatten.stages.load import load_module

    found: set[Path] = set()
    for root in roots:
        root = root.absolute()
        real_root = Path(os.path.realpath(root))
        seen: set[Path] = set()
        level = [root]
        while level:
            following: list[Path] = []
            for directory in level:
                try:
                    real = directory.resolve()
                except (OSError, RuntimeError):
                    continue
                if real in seen or not directory.is_dir():
                    continue
                seen.add(real)
                found.add(real)
                loaded, _ = load_module(directory, root=root, options=options, memo=memo)
                following.extend(_local_calls(loaded.module, directory, root, real_root))
            level = sorted(set(following))
    return found


def _local_calls(module: Module, directory: Path, root: Path, real_root: Path) -> list[Path]:
    """Return the directories ``module``'s local module calls name (literal ``source`` strings),
    spelled as the module graph spells them (stages/graph.py, ``_real_directory``): symlinks
    resolved, under ``root`` when inside it; else the build would miss what was preloaded."""
    out = []
    for block in module.blocks_of("module"):
        attr = block.body.attribute("source")
        value = attr.value if attr is not None else None
        if isinstance(value, str) and value.startswith(("./", "../")):
            try:
                real = Path(os.path.realpath(os.path.normpath(directory / value)))
            except (OSError, ValueError):
                continue
            try:
                out.append(root / real.relative_to(real_root))
            except ValueError:
                out.append(real)
    return out
