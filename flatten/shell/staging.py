"""The output tree written while the build's graph checks finish (issue 41).

A build of many modules computes its graph checks in a forked helper beside its layout
(``Memo.later``: flatten/shell/memo.py), then waits for their verdict. Meanwhile the command line's
memo hands the laid-out tree here (``Memo.laid_out``), and it is written into its temporary
directory beside --out (flatten/stages/output.py ``stage_tree``): once the build ends without
errors only the swap is left. Whatever else happens (an error, ``--out`` refused, Ctrl-C), the
tree is discarded and --out was never touched: a staged tree is swapped in only by ``commit``,
with the tree the build returned. The directories above --out that staging made (``write_tree``
makes --out's parents) are removed with a discarded tree, when still empty: a build that failed
leaves nothing behind.

Staging is only ever early, never different: the tree is written with the same code, into the
same place, under the same lock, as ``write_tree`` writes it after the build, and a failure to
stage is not reported here (the write after the build meets it and reports it). Nothing is staged
where the build's own checks would refuse the write (``allowed``: an --out inside a module
directory).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from flatten import gate
from flatten.stages.output import Fault, OutputError, StagedTree, stage_tree

if TYPE_CHECKING:
    from flatten.stages.graph import ModuleGraph
    from flatten.stages.layout import OutputTree

__all__ = ["Staging"]


class Staging:
    """At most one tree staged for a build into ``out`` (absolute), until committed or discarded.

    ``allowed`` tells whether the build of a graph may write into ``out`` at all (the command
    line's checks that need the graph); ``fault`` is the write's test hook
    (flatten/shell/faults.py)."""

    __slots__ = ("_allowed", "_fault", "_made", "_out", "_staged", "_tree")

    def __init__(
        self, out: Path, *, allowed: Callable[[ModuleGraph], bool], fault: Fault | None = None
    ) -> None:
        self._out = out
        self._allowed = allowed
        self._fault = fault
        self._staged: StagedTree | None = None
        self._tree: OutputTree | None = None
        # The directories above ``out`` the staging made: the one that existed, and the path
        # below it, removed again with a discarded tree.
        self._made: tuple[Path, str] | None = None

    def stage(self, graph: ModuleGraph, tree: OutputTree) -> None:
        """Write ``tree`` beside ``out``, to be swapped in by ``commit``; nothing when it may not be
        (see the module docstring) or cannot be (the write after the build reports why)."""
        if self._staged is not None or not self._allowed(graph):
            return
        made = _missing_parents(self._out)
        if made is None:
            return
        try:
            self._staged = stage_tree(self._out, tree.files, tree.copies, fault=self._fault)
        except (OutputError, OSError):
            self._remove_made(made)
            return
        self._tree, self._made = tree, made

    def commit(self, tree: OutputTree) -> bool:
        """Swap the staged tree in when it is ``tree`` (the build's result) and return True; else
        discard whatever is staged and return False (the caller writes ``tree`` itself). Raises
        what ``write_tree`` raises in its swap."""
        staged, staged_tree = self._staged, self._tree
        if staged is None:
            return False
        if staged_tree is not tree:
            self.discard()
            return False
        self._staged = self._tree = self._made = None
        with staged:
            staged.commit()
        return True

    def discard(self) -> None:
        """Remove the staged tree, if any (a build that ends without writing its output), and the
        directories above --out made for it."""
        staged, made = self._staged, self._made
        self._staged = self._tree = self._made = None
        if staged is not None:
            staged.discard()
        if made is not None:
            self._remove_made(made)

    @staticmethod
    def _remove_made(made: tuple[Path, str]) -> None:
        """Remove the directories below ``made[0]`` on the path ``made[1]``, deepest first, each
        only if empty (something put there meanwhile keeps it, and those above it)."""
        top, rel = made
        parts = [p for p in rel.split("/") if p]
        for depth in range(len(parts), 0, -1):
            try:
                with gate.open_dir(top, "/".join(parts[: depth - 1])) as parent:
                    if not parent.remove_empty(parts[depth - 1]):
                        return
            except OSError:
                return


def _missing_parents(out: Path) -> tuple[Path, str] | None:
    """The nearest existing directory above ``out`` and the path below it to ``out``'s parent
    (empty when the parent exists); None when that nearest existing entry is not a directory (the
    write after the build reports it)."""
    missing: list[str] = []
    here = out.parent
    while True:
        kind = gate.kind_of(here)
        if kind != "missing":
            break
        if here.parent == here:
            return None
        missing.append(here.name)
        here = here.parent
    if kind != "dir" and not (kind == "link" and not missing):  # --out's parent may be a link
        return None
    return here, "/".join(reversed(missing))
