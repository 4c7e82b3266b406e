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
from dataclasses import dataclass
from pathlib import Path

__all__ = ["InstalledModule", "read_installed"]


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


def read_installed(root: Path, data_dir: str) -> dict[str, InstalledModule]:
    """Return the records of ``<root>/<data_dir>/modules/modules.json`` by key; {} when there is none."""
    base = root / data_dir if not os.path.isabs(data_dir) else Path(data_dir)
    modules_dir = base / "modules"
    try:
        doc = json.loads((modules_dir / "modules.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # RecursionError: nested too deep for json
        return {}
    records = doc.get("Modules") if isinstance(doc, dict) else None
    out: dict[str, InstalledModule] = {}
    for rec in records if isinstance(records, list) else []:
        if not isinstance(rec, dict):
            continue
        key, source, directory = rec.get("Key"), rec.get("Source"), rec.get("Dir")
        version = rec.get("Version")
        if not (isinstance(key, str) and key and isinstance(source, str) and isinstance(directory, str)):
            continue
        full = Path(os.path.normpath(root / directory))
        package_root = modules_dir / key
        if not _within(full, package_root):
            package_root = full
        escapes = None
        if not _within(full, Path(os.path.normpath(modules_dir))):
            escapes = "outside"
        elif not _within(Path(os.path.realpath(full)), Path(os.path.realpath(modules_dir))):
            escapes = "symlink"
        out[key] = InstalledModule(
            key,
            source,
            version if isinstance(version, str) and version else None,
            full,
            package_root,
            escapes,
        )
    return out


def _within(path: Path, parent: Path) -> bool:
    try:
        path.relative_to(parent)
    except ValueError:
        return False
    return True
