"""Case directories under tests/data: one reader for the layout every case-driven test shares.

A case is a directory. Expected diagnostics sit on the line they must start on, as
``# ERROR: <summary>`` / ``# WARNING: <summary>`` (several on one line if needed) in ``.tf`` and
``.tofu`` files; JSON files, which have no comments, list theirs in ``expected-diagnostics.txt``
as ``<file>:<line> ERROR: <summary>``. A case without markers must give no diagnostics. A file
``DIALECT`` names the dialect (``terraform`` or ``opentofu``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from flatten.lang.options import Dialect, Options

_MARKER = re.compile(r"#\s*(ERROR|WARNING):\s*([^#]+?)\s*(?=#|$)")
_LISTED = re.compile(r"^(\S+):(\d+) (ERROR|WARNING): (.+)$")
LISTING = "expected-diagnostics.txt"


class Expected(NamedTuple):
    """One expected diagnostic: where it starts (file relative to the case), severity, summary."""

    file: str
    line: int
    severity: str  # "error" or "warning", as Severity.value
    summary: str


def case_dirs(area: Path, *, holding: str | None = None) -> list[Path]:
    """The case directories of ``area``, sorted by name; only those holding ``holding`` if given."""
    return sorted(p for p in area.iterdir() if p.is_dir() and (holding is None or (p / holding).exists()))


def expected_diagnostics(case: Path, *, nested: bool = False) -> list[Expected]:
    """The diagnostics the case's markers ask for, sorted. ``nested``: also in subdirectories
    (child modules of a root case), named by their path relative to the case."""
    files = case.rglob("*") if nested else case.iterdir()
    out: list[Expected] = []
    for path in sorted(files):
        if path.suffix in (".tf", ".tofu") and path.is_file():
            name = path.relative_to(case).as_posix()
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                out.extend(Expected(name, n, kind.lower(), text) for kind, text in _MARKER.findall(line))
    listing = case / LISTING
    if listing.exists():
        for line in listing.read_text(encoding="utf-8").splitlines():
            m = _LISTED.match(line.strip())
            if m:
                out.append(Expected(m.group(1), int(m.group(2)), m.group(3).lower(), m.group(4)))
    return sorted(out)


def case_options(case: Path, *, default: Dialect = Dialect.OPENTOFU) -> Options:
    """Options in the case's dialect: its ``DIALECT`` file, else ``default``."""
    marker = case / "DIALECT"
    return Options(dialect=Dialect(marker.read_text().strip()) if marker.exists() else default)
