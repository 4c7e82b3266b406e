"""What every report format shares: where paths are relative to, rule ids, location text."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from flatten.lang.diagnostics import Diagnostic

__all__ = ["SourceBase", "find_base", "location_text", "rule_id"]


@dataclass(frozen=True, slots=True)
class SourceBase:
    """The root module directory and the directory report paths are relative to.

    ``base`` is the root of the git repository holding ``root`` (what code scanning and workflow
    annotations resolve paths against), or ``root`` itself outside any repository.
    """

    root: Path
    base: Path
    in_repository: bool

    def path_of(self, filename: str) -> str | None:
        """Return a diagnostic's file (relative to the root) relative to ``base``, or None.

        None for a file that is not in the checkout: one in a downloaded package (named
        ``<package address>//<path>``) or a local module outside the repository.
        """
        if "//" in filename:
            return None
        full = os.path.normpath(os.path.join(self.root, filename))
        rel = os.path.relpath(full, self.base)
        if rel == os.pardir or rel.startswith(os.pardir + os.sep):
            return None
        return Path(rel).as_posix()

    @property
    def root_path(self) -> str:
        """The root module directory relative to ``base`` (``.`` when they are the same)."""
        return Path(os.path.relpath(self.root, self.base)).as_posix()


def find_base(root: Path) -> SourceBase:
    """Return the ``SourceBase`` of the absolute directory ``root``: its git repository, if any.

    A ``.git`` directory or file (worktrees and submodules have a file) marks a repository root;
    git itself is not run, so this works where git is not installed.
    """
    for directory in (root, *root.parents):
        if os.path.lexists(directory / ".git"):
            return SourceBase(root, directory, True)
    return SourceBase(root, root, False)


# Double-quoted parts of Terraform's summaries are names from the configuration (resource types,
# variable names, keywords the user wrote): dropped, so one rule gathers every instance.
_QUOTED = re.compile(r'"[^"]*"')
_NOT_WORD = re.compile(r"[^a-z0-9]+")


def rule_id(summary: str) -> str:
    """Return the rule id for a summary: ``Duplicate resource "x" configuration`` is
    ``duplicate-resource-configuration``."""
    slug = _NOT_WORD.sub("-", _QUOTED.sub(" ", summary).lower()).strip("-")
    return slug or "diagnostic"


def location_text(d: Diagnostic, path: str | None = None) -> str:
    """Return where ``d`` is, as HCL writes a range (``main.tf:4,1-30``), with its module."""
    where = ""
    if d.range is not None:
        r = d.range
        end = f"{r.end.column}" if r.end.line == r.start.line else f"{r.end.line},{r.end.column}"
        where = f"{path or r.filename}:{r.start.line},{r.start.column}-{end}"
    if d.module:
        where = f"{where}, in {d.module}" if where else f"in {d.module}"
    return where
