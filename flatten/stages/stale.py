"""``--check``: how an existing output differs from the tree a build writes now, as diagnostics.

Each changed, missing or extra file is one error diagnostic ("Output is out of date") placed on
that file of the output, so that every report format carries it (text, ``validate -json``,
SARIF, JUnit, GitHub annotations) and CI fails on it the way it fails on a configuration error.
What Terraform wrote into the root module's directory (flatten/lang/workdir.py: ``.terraform/``,
state, lock files, saved plans) is not the build's and is not counted: a rebuild keeps it too
(flatten/stages/output.py).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType

from flatten.lang.diagnostics import Code, Diagnostic, Diagnostics, Extra
from flatten.lang.model import Pos, Range
from flatten.stages.output import terraform_entries

__all__ = ["STALE_SUMMARY", "StaleFile", "Staleness", "stale_diagnostics", "stale_files"]

STALE_SUMMARY = "Output is out of date"


class Staleness(StrEnum):
    CHANGED = "changed"  # in both, with other bytes
    MISSING = "missing"  # the build writes it, the output has none
    EXTRA = "extra"  # the output has it, the build does not write it


@dataclass(frozen=True, slots=True)
class StaleFile:
    """One file where the output differs from the build: its path relative to the output (POSIX)."""

    path: str
    how: Staleness


def _existing(out: Path, root_place: str, written: Mapping[str, bytes]) -> set[str]:
    """Return the output's files (relative POSIX paths), without Terraform's entries in the root
    module's directory (nor anything below them)."""
    found: set[str] = set()
    root_dir = os.path.normpath(os.path.join(out, root_place))
    for current, dirs, names in os.walk(out):
        if os.path.normpath(current) == root_dir:
            rel_dir = os.path.relpath(current, out)
            prefix = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
            here = (rel[len(prefix) :] for rel in written if rel.startswith(prefix))
            mine = {name for name in here if "/" not in name}
            skipped = set(terraform_entries(current, mine))
            dirs[:] = [d for d in dirs if d not in skipped]
            names = [n for n in names if n not in skipped]
        for name in names:
            path = os.path.join(current, name)
            if os.path.isfile(path) or os.path.islink(path):
                found.add(os.path.relpath(path, out).replace(os.sep, "/"))
    return found


def stale_files(out: Path, files: Mapping[str, bytes], *, root_place: str = "") -> list[StaleFile]:
    """Return how the output directory ``out`` differs from ``files`` (relative path -> bytes, the
    whole tree a build writes; ``root_place``: where it puts the root module), sorted by path."""
    existing = _existing(out, root_place, files) if out.is_dir() else set()
    stale = []
    for rel in sorted(set(files) | existing):
        if rel not in existing:
            stale.append(StaleFile(rel, Staleness.MISSING))
        elif rel not in files:
            stale.append(StaleFile(rel, Staleness.EXTRA))
        else:
            try:
                same = (out / rel).read_bytes() == files[rel]
            except OSError:
                same = False
            if not same:
                stale.append(StaleFile(rel, Staleness.CHANGED))
    return stale


_DETAIL = MappingProxyType(
    {
        Staleness.CHANGED: "{shown} is not what the build writes now: a source it reads changed since "
        "{out} was built.",
        Staleness.MISSING: "The build writes {shown}, which {out} does not have.",
        Staleness.EXTRA: "{out} has {shown}, which the build no longer writes.",
    }
)


def stale_diagnostics(
    stale: list[StaleFile], *, out: Path, root: Path, out_text: str, command: str
) -> Diagnostics:
    """Return one "Output is out of date" error for each of ``stale``, placed on that file of the
    output directory ``out`` (absolute; the range's file name is relative to ``root``, the absolute
    root module directory, as every diagnostic's is). ``out_text`` is ``--out`` as typed and
    ``command`` the build command to run (``flatten build live --out flat``)."""
    diags = Diagnostics()
    for item in stale:
        shown = f"{out_text.rstrip('/')}/{item.path}"
        filename = os.path.relpath(os.path.join(out, item.path), root).replace(os.sep, "/")
        at = Pos(1, 1, 0)
        detail = _DETAIL[item.how].format(shown=shown, out=out_text)
        detail += f" Run `{command}` to rebuild the output, then commit it with its sources."
        diags.append(
            Diagnostic.error(
                STALE_SUMMARY,
                detail,
                Range(filename, at, at),
                extra=Extra(code=Code.STALE_OUTPUT, subject=f"{item.how.value}: {item.path}"),
            )
        )
    return diags
