"""The build's progress line on a terminal: modules read of those known, loaded, then writing.

One ``BuildProgress`` per ``flatten`` process, made by flatten/shell/process.py when stderr is a
terminal (never when piped, nor with ``--quiet``), and handed on explicitly: to the prefetching
child (which reads most modules of a cold build) and, wrapped around the build's memo
(``ProgressMemo``), to the stages, which see only the ``Memo`` seam they always see.

The line is drawn only once the build has run about a second (a warm build never shows it), at
most ten times a second, with a carriage return on one line, and cleared before anything else is
printed. It is written to file descriptor 2 directly: the build's ``sys.stderr`` is recorded for
replay (flatten/shell/replay.py), and a progress line must never be replayed.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from flatten.lang.diagnostics import Diagnostics
    from flatten.lang.model import Body, Module
    from flatten.lang.options import Dialect
    from flatten.stages.files import DirectoryListing
    from flatten.stages.graph import ModuleGraph
    from flatten.stages.layout import OutputTree
    from flatten.stages.memo import (
        CheckRequest,
        LoadedModule,
        Memo,
        MemoKey,
        ModuleChecks,
        ModuleSource,
        ParseSource,
        Raws,
    )

__all__ = ["BuildProgress", "ProgressMemo"]

#: Nothing is drawn before the build has run this long (seconds): quick builds stay silent.
DELAY = 1.0
#: At most one redraw per this many seconds.
INTERVAL = 0.1


class BuildProgress:
    """Draws ``flatten: reading modules 12/300`` (then ``writing ...``) on stderr, a terminal."""

    def __init__(self, *, fd: int = 2, started: float | None = None, width: int = 80) -> None:
        self._fd = fd
        self._started = time.monotonic() if started is None else started
        self._last = 0.0
        self._drawn = False
        self._width = width

    @classmethod
    def on_terminal(cls) -> BuildProgress | None:
        """Return a reporter for this process's stderr, or None when it is not a terminal."""
        try:
            if not os.isatty(2):
                return None
            width = os.get_terminal_size(2).columns
        except OSError:
            return None
        return cls(width=width or 80)

    def reading(self, done: int, known: int) -> None:
        """``done`` modules read (loaded and merged) of the ``known`` ones found so far."""
        self._draw(f"reading modules {min(done, known)}/{known}")

    def loading(self, done: int, known: int) -> None:
        """The build proper: ``done`` modules loaded (from what prefetch read, or read now)."""
        self._draw(f"loading modules {min(done, known)}/{known}")

    def writing(self, what: str, *, force: bool = False) -> None:
        """The output is being made: ``what`` says how far (``emitting 3/300``, ``12 files``)."""
        self._draw(f"writing {what}", force=force)

    def clear(self) -> None:
        """Erase the line, if one was drawn (before anything else is printed)."""
        if self._drawn:
            self._write("\r\x1b[K")
            self._drawn = False

    def _draw(self, text: str, *, force: bool = False) -> None:
        now = time.monotonic()
        if now - self._started < DELAY or (not force and now - self._last < INTERVAL):
            return
        self._last = now
        self._drawn = True
        self._write(f"\r\x1b[Kflatten: {text}"[: self._width])

    def _write(self, text: str) -> None:
        # A terminal gone away: the build goes on without its progress.
        with contextlib.suppress(OSError):
            os.write(self._fd, text.encode())


class ProgressMemo:
    """A ``Memo`` that passes every call on to ``inner`` and reports progress as modules load
    (each module's calls add to those known) and as their output is emitted."""

    __slots__ = ("_emitted", "_inner", "_known", "_progress", "_read")

    def __init__(self, inner: Memo, progress: BuildProgress) -> None:
        self._inner = inner
        self._progress = progress
        self._read = 0
        self._known = 1  # the root module
        self._emitted = 0

    def parsed(
        self, source: ParseSource, compute: Callable[[], tuple[Body, Diagnostics]]
    ) -> tuple[Body, Diagnostics]:
        return self._inner.parsed(source, compute)

    def listing(
        self, directory: Path, dialect: Dialect, compute: Callable[[], DirectoryListing]
    ) -> DirectoryListing:
        return self._inner.listing(directory, dialect, compute)

    def module(
        self, source: ModuleSource, compute: Callable[[Raws | None], LoadedModule]
    ) -> tuple[LoadedModule, MemoKey | None]:
        loaded, key = self._inner.module(source, compute)
        self._read += 1
        self._known += sum(1 for _ in loaded.module.blocks_of("module"))
        self._progress.loading(self._read, max(self._known, self._read))
        return loaded, key

    def emitted(
        self,
        key: MemoKey | None,
        original: Module,
        output: Module,
        provenance: bool,
        compute: Callable[[], bytes],
    ) -> bytes:
        data = self._inner.emitted(key, original, output, provenance, compute)
        self._emitted += 1
        self._progress.writing(f"modules {self._emitted}/{max(self._read, self._emitted)}")
        return data

    def checked(self, requests: Sequence[CheckRequest]) -> list[ModuleChecks]:
        return self._inner.checked(requests)

    def later(self, compute: Callable[[], Diagnostics], *, modules: int) -> Callable[[], Diagnostics]:
        return self._inner.later(compute, modules=modules)

    def laid_out(self, graph: ModuleGraph, tree: OutputTree) -> None:
        self._inner.laid_out(graph, tree)
