"""Terraform's own module installation: ``<data dir>/modules/modules.json`` (spec §5.7).

The file is ``{"Modules": [{"Key": "a.b", "Source": "...", "Version": "...", "Dir": "..."}]}``:
one record per module path (the root has Key ""), ``Dir`` relative to the root. A remote
package is installed whole under ``<data dir>/modules/<key>`` and ``Dir`` points at the module's
subdirectory inside it. Rule for the file: a record is only trusted for a call whose source
string is the one recorded (and whose version constraint, if any, the recorded version meets);
anything unreadable is simply not reused. A record whose ``Dir`` lies outside
``<data dir>/modules`` (``../../etc``), or leads out of it through a symlink, is kept with
``escapes`` set, so the fetcher can refuse it by name instead of reading that directory.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from flatten import gate

__all__ = ["Installed", "InstalledModule", "read_installed"]


@dataclass(frozen=True, slots=True)
class InstalledModule:
    """One record of ``modules.json``: the module's directory and the package directory around it."""

    key: str
    source: str
    version: str | None
    directory: Path
    package_root: Path
    #: None, or why ``directory`` is not inside ``<data dir>/modules``: "outside" (the recorded
    #: path leaves it) or "symlink" (a link inside it leads out; what Terraform's file getter makes
    #: for a local-directory source).
    escapes: str | None = None

    @property
    def subdir(self) -> str:
        rel = os.path.relpath(self.directory, self.package_root)
        return "" if rel == "." else Path(rel).as_posix()


@dataclass(frozen=True, slots=True)
class Installed:
    """The records of one ``modules.json``, checked only when a call asks for one.

    A crafted file may hold hundreds of thousands of records; resolving each path up front cost
    about 0.5 ms a record (``realpath`` and ``relative_to``), so only the records a build looks
    up are turned into an :class:`InstalledModule`.
    """

    root: Path
    modules_dir: Path
    records: Mapping[str, tuple[str, str | None, str]]  # key -> (source, version, Dir)

    def get(self, key: str) -> InstalledModule | None:
        rec = self.records.get(key)
        if rec is None:
            return None
        source, version, directory = rec
        full = Path(os.path.normpath(self.root / directory))
        modules_dir = Path(os.path.normpath(self.modules_dir))
        package_root = self.modules_dir / key
        if not _within(full, package_root):
            package_root = full
        escapes = None
        # Strictly inside: a Dir naming the modules directory itself would vendor every
        # installed package and modules.json.
        if full == modules_dir or not _within(full, modules_dir):
            escapes = "outside"
        elif not _within(Path(os.path.realpath(full)), Path(os.path.realpath(modules_dir))):
            escapes = "symlink"
        return InstalledModule(key, source, version, full, package_root, escapes)

    def __len__(self) -> int:
        return len(self.records)


def read_installed(root: Path, data_dir: str) -> Installed:
    """Return the records of ``<root>/<data_dir>/modules/modules.json``; none when there is none.

    A record with a NUL byte in a field names no file (``os.path.realpath`` would raise) and is
    not reused, as any record flatten cannot read; other characters are shown escaped wherever a
    message quotes them (``flatten/lang/printable.py``).
    """
    base = root / data_dir if not os.path.isabs(data_dir) else Path(data_dir)
    modules_dir = base / "modules"
    records: dict[str, tuple[str, str | None, str]] = {}
    try:
        # Through the gate (issue 38, item 9): a regular file inside the modules directory, at
        # most gate.CONFIG_LIMIT bytes; a FIFO or a link to /dev/zero is refused unread.
        doc = json.loads(gate.read_text(modules_dir / "modules.json", inside=(modules_dir,)))
    except (OSError, ValueError, RecursionError):  # RecursionError: nested too deep for json
        doc = None
    found = doc.get("Modules") if isinstance(doc, dict) else None
    for rec in found if isinstance(found, list) else []:
        if not isinstance(rec, dict):
            continue
        key, source, directory = rec.get("Key"), rec.get("Source"), rec.get("Dir")
        version = rec.get("Version")
        if not (isinstance(key, str) and key and isinstance(source, str) and isinstance(directory, str)):
            continue
        if "\x00" in key or "\x00" in directory:
            continue
        records[key] = (source, version if isinstance(version, str) and version else None, directory)
    return Installed(root, modules_dir, records)


def _within(path: Path, parent: Path) -> bool:
    try:
        path.relative_to(parent)
    except ValueError:
        return False
    return True
