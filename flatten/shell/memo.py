"""The disk-backed memo the command line passes to ``build`` (the seam: flatten/stages/memo.py).

It answers the stages from flatten's caches: parsed files from the parse cache
(flatten/shell/parse_cache.py), loaded and merged modules and their output bytes from the module
and emit caches (flatten/shell/build_cache.py), and directory listings and module keys from what
prefetch read a moment before the build. Each answer is what the stage's ``compute`` gives for
the same inputs (every entry is a pure function of its key); whatever the caches lack, or when
they are turned off, is computed. The process-wide tricks the stages must not know about live
here too: the garbage collector is off while a file is parsed (python-hcl2-notes §1.7), and
python-hcl2's grammar cache moves to flatten's cache directory when site-packages is read-only.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from flatten.lang.diagnostics import Diagnostics
from flatten.lang.model import Body, Module
from flatten.lang.options import Dialect, Options
from flatten.shell import build_cache, parse_cache
from flatten.shell.cache_dir import area, cache_root
from flatten.stages.files import DirectoryListing
from flatten.stages.load import display_path, read_config
from flatten.stages.memo import (
    NO_MEMO,
    CheckRequest,
    LoadedModule,
    MemoKey,
    ModuleChecks,
    ModuleSource,
    ParseSource,
    Raws,
)

if TYPE_CHECKING:
    from flatten.shell.staging import Staging
    from flatten.stages.graph import ModuleGraph
    from flatten.stages.layout import OutputTree

__all__ = ["DiskMemo", "forget_keys", "keep_grammar_cache", "module_keys", "source_key"]

_STATE: dict[str, bool] = {}
# Fewer modules than this have their graph checks computed in place, not beside the layout in a
# forked helper (``DiskMemo.later``): as for the parts' helpers (build_cache._SHARED_PARTS).
_LATER_MODULES = 16
# The module key of every directory this process loaded, by display path (None: loaded with two
# different keys). A build record keeps them (flatten/shell/incremental.py): the next rebuild
# takes a changed module's previous version from the module cache by its key.
_KEYS: dict[str, str | None] = {}


def module_keys() -> dict[str, str | None]:
    """Return the module key of each directory loaded through a ``DiskMemo`` since ``forget_keys``."""
    return dict(_KEYS)


def forget_keys() -> None:
    """Start noting module keys afresh (before a build whose keys a record will keep)."""
    _KEYS.clear()


def _note(display: str, key: str) -> None:
    _KEYS[display] = key if _KEYS.get(display, key) == key else None


class DiskMemo:
    """The stages' memo, backed by flatten's caches (see the module docstring).

    With ``captured``, module entries this memo computes are appended there instead of being
    written (a prefetch worker hands them to the process that started it). With ``staging``, a
    tree laid out while the graph checks finish is written beside --out meanwhile
    (flatten/shell/staging.py).
    """

    __slots__ = ("_captured", "_staging")

    def __init__(
        self,
        *,
        captured: list[tuple[str, build_cache.ModuleEntry]] | None = None,
        staging: Staging | None = None,
    ) -> None:
        self._captured = captured
        self._staging = staging

    def parsed(
        self, source: ParseSource, compute: Callable[[], tuple[Body, Diagnostics]]
    ) -> tuple[Body, Diagnostics]:
        keep_grammar_cache()
        # parse_cached switches the garbage collector off around reading and parsing.
        return parse_cache.parse_cached(
            source.text, source.name, source.syntax, options=Options(dialect=source.dialect), compute=compute
        )

    def listing(
        self, directory: Path, dialect: Dialect, compute: Callable[[], DirectoryListing]
    ) -> DirectoryListing:
        found = build_cache.prelisted(directory, dialect)
        return found if found is not None else compute()

    def module(
        self, source: ModuleSource, compute: Callable[[Raws | None], LoadedModule]
    ) -> tuple[LoadedModule, MemoKey | None]:
        if not build_cache.enabled():
            return compute(None), None
        # After prefetch read the directory (a moment earlier), the key of what it read; with the
        # bytes it was made of when prefetch found no entry and left the module to this process.
        found = build_cache.preread(source.directory, source.root, source.options, source.listing)
        key, raws = found if found is not None else ("", None)
        del found  # the bytes are held by ``raws`` alone (taken as they are decoded)
        if raws is None:
            # The entry by the key prefetch made (read or computed ahead), else by the bytes read now.
            entry = build_cache.take(key, source.display) if key else None
            if entry is None:
                # Keyed by the exact bytes read here, which are also what is parsed.
                try:
                    key, raws = source_key(source)
                except OSError:
                    return compute(None), None  # the stage reports the file; such a module is not kept
                entry = build_cache.take(key, source.display)
            if entry is not None:
                _note(source.display, key)
                return _loaded(entry), MemoKey(entry.module, key)
        assert raws is not None  # read above, or noted by prefetch with the key it made
        _note(source.display, key)
        taken = Raws(raws)
        del raws  # the stage takes each file's bytes as it decodes them; nothing else holds them
        loaded = compute(taken)
        stored = build_cache.ModuleEntry(
            source.display, loaded.files, loaded.load_diags, source.display, loaded.module, loaded.merge_diags
        )
        build_cache.computed(key, stored, self._captured)
        return loaded, MemoKey(loaded.module, key)

    def emitted(
        self,
        key: MemoKey | None,
        original: Module,
        output: Module,
        provenance: bool,
        compute: Callable[[], bytes],
    ) -> bytes:
        if key is None or key.module is not original:
            return compute()
        return build_cache.emitted(key.key, original, output, provenance, compute)

    def checked(self, requests: Sequence[CheckRequest]) -> list[ModuleChecks]:
        return build_cache.checked(requests)

    def later(self, compute: Callable[[], Diagnostics], *, modules: int) -> Callable[[], Diagnostics]:
        # Beside the layout, in a forked helper (the build's one core was idle meanwhile); for a
        # few modules here and now (a fork costs more than their checks).
        if modules < _LATER_MODULES:
            return NO_MEMO.later(compute, modules=modules)
        from flatten.shell import forks

        return forks.later(compute, then=build_cache.finish)

    def laid_out(self, graph: ModuleGraph, tree: OutputTree) -> None:
        if self._staging is not None:
            self._staging.stage(graph, tree)


def source_key(source: ModuleSource) -> tuple[str, list[bytes]]:
    """Return the module key of ``source``'s configuration files as read now, and their bytes
    (``OSError`` when one cannot be read)."""
    raws = [read_config(entry.path, source.root) for entry in source.listing.files]
    key = build_cache.module_key(
        source.display,
        [
            (display_path(e.path, source.root), e.syntax, e.is_override, raw)
            for e, raw in zip(source.listing.files, raws, strict=True)
        ],
        source.options,
    )
    return key, raws


def _loaded(entry: build_cache.ModuleEntry) -> LoadedModule:
    return LoadedModule(entry.files, entry.load_diags, entry.module, entry.merge_diags)


# -- python-hcl2's grammar cache -------------------------------------------------------------------


def keep_grammar_cache() -> None:
    """Move python-hcl2's grammar cache to flatten's cache directory when site-packages is read-only.

    python-hcl2 pickles its Lark parser into ``hcl2/.lark_cache.bin`` on first use; where that
    cannot be written, every process would rebuild the parser (about 1.5 s, notes §1.7). Lark
    checks the grammar's hash when it loads a cache file, so a stale file is never used. Checked
    once per process, without importing python-hcl2 (most builds never need it): when
    ``hcl2.parser`` is not imported yet, it is redirected as soon as it is.
    """
    if _STATE.get("grammar"):
        return
    _STATE["grammar"] = True
    try:
        loaded = sys.modules.get("hcl2.parser")
        if loaded is not None:
            _redirect(loaded)
            return
        spec = importlib.util.find_spec("hcl2")  # finds the package without importing it
        if spec is None or not spec.origin:
            return
        if not _needs_redirect(Path(spec.origin).parent / ".lark_cache.bin"):
            return
        # Only then: importlib.abc alone is about 8 ms of the imports before prefetch forks.
        from flatten.shell.after_import import AfterImport

        sys.meta_path.insert(0, AfterImport("hcl2.parser", _redirect))
    except Exception:  # the default location then; only slower
        return


def _needs_redirect(current: Path) -> bool:
    return not current.exists() and not os.access(current.parent, os.W_OK)


def _redirect(parser: ModuleType) -> None:
    try:
        if not _needs_redirect(Path(getattr(parser, "PARSER_FILE"))):  # noqa: B009 - untyped module
            return
        directory = cache_root() / "lark"
        if area(directory) is None:  # made through the gate; python-hcl2 writes its file there
            return
        setattr(parser, "PARSER_FILE", directory / "hcl2.lark_cache.bin")  # noqa: B010
    except Exception:  # the default location then; only slower
        return
