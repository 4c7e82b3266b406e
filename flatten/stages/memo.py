"""The seam between the stages and the shell's caches: one ``Memo`` object, passed down explicitly.

Every stage is a pure function of its arguments. Where one would do work a previous build
already did (parse a file, load and merge a module, list a directory, emit a module's bytes) it
asks the memo instead: ``memo.parsed(source, compute)`` and the like return exactly what
``compute`` returns for those inputs, from wherever the memo keeps it. ``NO_MEMO`` just calls
``compute``; the disk-backed, prefetch-fed memo lives in flatten/shell/memo.py and is what the
command line passes to ``build``. So a stage is correct with either, only slower with
``NO_MEMO``, and ``tests/test_memo.py`` checks both give the same build.

The value a memo returns is always compute's own: it may come from an earlier process (same
bytes, same code), never from a different input. What a memo may add is its name for a module
it returned (``MemoKey``), which the layout hands back to ``emitted`` for that very module.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from flatten.lang.diagnostics import Diagnostic, Diagnostics
from flatten.lang.model import Body, Module, ParsedFile
from flatten.lang.options import Dialect, Options
from flatten.stages.files import DirectoryListing

if TYPE_CHECKING:
    from flatten.stages.dependencies import GraphPart
    from flatten.stages.graph import ModuleGraph
    from flatten.stages.layout import OutputTree

__all__ = [
    "NO_MEMO",
    "CheckKey",
    "CheckRequest",
    "LoadedModule",
    "Memo",
    "MemoKey",
    "ModuleChecks",
    "ModuleSource",
    "NoMemo",
    "ParseSource",
]


class Raws:
    """A module's files' bytes as the memo read them, in listing order, each taken once.

    The stage takes a file's bytes as it decodes them and the memo keeps no other reference, so
    no file's bytes stay alive while it, or the files after it, are parsed: for a 10 MB file they
    were a tenth of the peak (docs/reliability.md, "Memory").
    """

    __slots__ = ("_items",)

    def __init__(self, items: list[bytes]) -> None:
        self._items: list[bytes | None] = list(items)

    def take(self, i: int) -> bytes:
        raw = self._items[i]
        assert raw is not None, "a file's bytes are taken once"
        self._items[i] = None
        return raw


@dataclass(frozen=True, slots=True)
class ParseSource:
    """Everything a file's parse is a function of: its text, display name, syntax and dialect."""

    text: str
    name: str  # the display name the ranges carry
    syntax: str  # "native" or "json"
    dialect: Dialect


@dataclass(frozen=True, slots=True)
class ModuleSource:
    """A module directory about to be loaded and merged (``load.load_module``).

    The loaded module is a function of the listed files' display names (relative to ``root``),
    syntax, override flags and bytes, of ``display`` and of ``options``. The memo reads the bytes
    it keys (``listing``'s files) and hands them to ``compute``, so what is parsed is exactly
    what was keyed; ``compute(None)`` reads them itself.
    """

    directory: Path
    root: Path
    display: str  # display_path(directory, root): the module's directory in ranges and Module
    listing: DirectoryListing
    options: Options


@dataclass(frozen=True, slots=True)
class LoadedModule:
    """A module directory's parsed files and merged module, with each step's diagnostics."""

    files: tuple[ParsedFile, ...]
    load_diags: tuple[Diagnostic, ...]
    module: Module
    merge_diags: tuple[Diagnostic, ...]


@dataclass(frozen=True, slots=True)
class MemoKey:
    """A memo's name for the module it returned: valid for that very ``module`` object only.

    Later stages may replace a node's module (inlining, explicit providers); the layout asks
    ``emitted`` with the key only while the node still holds this object.
    """

    module: Module
    key: str


@dataclass(frozen=True, slots=True)
class CheckKey:
    """Everything a module's part of the checks (``ModuleChecks``) is a function of.

    ``module`` and ``caller`` are memo keys (``MemoKey.key``: a module's files, display path,
    options and flatten's code), so the module's text and its caller's (the call block, whose
    arguments the module's variables read) are in; ``outputs`` is what the module reads of its
    children (each call's module's output names; None: none loaded). flatten/providers/checks.py
    makes it and tests/shell/test_check_memo.py fails when an input is left out.
    """

    module: str
    address: str
    caller: str  # the calling module's memo key ("" for the root)
    call: str  # the call's name in the caller ("" for the root)
    dropped: bool  # left out of the configuration (Terraform 1.15): no part of the graph
    outputs: tuple[tuple[str, tuple[str, ...] | None], ...]
    dialect: str
    release: tuple[int, int]
    objects: bool  # var, local, resource and data references checked (``--checks``)


@dataclass(frozen=True, slots=True)
class ModuleChecks:
    """One module's part of the validate-level checks: what the reference and function checks
    found in its blocks, in order, and its part of the cycle graph (None when it is left out)."""

    diags: tuple[Diagnostic, ...]
    graph: GraphPart | None


# One module's part of the checks asked of a memo: its key, and what computes it.
CheckRequest = tuple[CheckKey, Callable[[], ModuleChecks]]


class Memo(Protocol):
    """Where the stages find work already done. Each method returns what ``compute`` returns."""

    def parsed(
        self, source: ParseSource, compute: Callable[[], tuple[Body, Diagnostics]]
    ) -> tuple[Body, Diagnostics]:
        """A file's ``(Body, Diagnostics)``."""
        ...

    def listing(
        self, directory: Path, dialect: Dialect, compute: Callable[[], DirectoryListing]
    ) -> DirectoryListing:
        """A directory's configuration files (``compute`` may raise OSError, which passes through)."""
        ...

    def module(
        self, source: ModuleSource, compute: Callable[[Raws | None], LoadedModule]
    ) -> tuple[LoadedModule, MemoKey | None]:
        """A loaded and merged module, and the memo's name for it (None: it has none).

        ``compute`` is given the files' bytes when the memo read them (to key the module by
        exactly what is parsed), or None to read them itself."""
        ...

    def emitted(
        self,
        key: MemoKey | None,
        original: Module,
        output: Module,
        provenance: bool,
        compute: Callable[[], bytes],
    ) -> bytes:
        """A module's output bytes: ``compute()``, which renders ``output``; ``original`` is the
        module ``key`` names, which ``output`` may differ from only in its ``module`` blocks."""
        ...

    def checked(self, requests: Sequence[CheckRequest]) -> list[ModuleChecks]:
        """Each module's part of the checks (``compute()``, a function of ``key``), in order.

        Asked for every module at once: the parts are independent of each other, so a memo may
        compute those it lacks side by side (flatten/shell/memo.py)."""
        ...

    def later(self, compute: Callable[[], Diagnostics], *, modules: int) -> Callable[[], Diagnostics]:
        """``compute()``, taken when the function returned is called: the caller has other work
        that does not need it meanwhile (the build's layout beside its graph checks), and a memo
        may compute it beside that work (flatten/shell/memo.py); ``modules``: how many modules
        the work covers (a memo may judge a small one not worth a process)."""
        ...

    def laid_out(self, graph: ModuleGraph, tree: OutputTree) -> None:
        """The build of ``graph`` has laid out its output ``tree`` and waits for ``later`` work:
        a memo may begin meanwhile what its caller does with the tree of a build that ends
        without errors (the command line writes it beside --out, swapped in only then:
        flatten/shell/staging.py). Nothing it does changes what the build returns."""
        ...


class NoMemo:
    """The memo that remembers nothing: every call computes."""

    __slots__ = ()

    def parsed(
        self, source: ParseSource, compute: Callable[[], tuple[Body, Diagnostics]]
    ) -> tuple[Body, Diagnostics]:
        return compute()

    def listing(
        self, directory: Path, dialect: Dialect, compute: Callable[[], DirectoryListing]
    ) -> DirectoryListing:
        return compute()

    def module(
        self, source: ModuleSource, compute: Callable[[Raws | None], LoadedModule]
    ) -> tuple[LoadedModule, MemoKey | None]:
        return compute(None), None

    def emitted(
        self,
        key: MemoKey | None,
        original: Module,
        output: Module,
        provenance: bool,
        compute: Callable[[], bytes],
    ) -> bytes:
        return compute()

    def checked(self, requests: Sequence[CheckRequest]) -> list[ModuleChecks]:
        return [compute() for _, compute in requests]

    def later(self, compute: Callable[[], Diagnostics], *, modules: int) -> Callable[[], Diagnostics]:
        value = compute()
        return lambda: value

    def laid_out(self, graph: ModuleGraph, tree: OutputTree) -> None:
        return None


NO_MEMO: Memo = NoMemo()
