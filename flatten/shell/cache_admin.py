"""Looking after the cache directory: its size, cleaning it, and the size limit (docs/cache.md).

What lives there (``cache_dir.cache_root``): content-keyed entries, one file each, in flat
directories (``parse/``, ``modules/``, ``emit/``, ``builds/``, ``commands/``, ``module-keys/``,
``code/``), and downloaded packages, one directory each (``v1/packages/<id>/``, with
``v1/locks/`` and downloads in progress in ``v1/tmp/``). Everything is derived: a missing entry is
a miss and is made again, so any of it may be deleted at any time.

Why deleting never breaks a build that runs meanwhile: a file entry is written to a temporary
file and renamed into place, and read by ``open`` then ``read``. Removing it before the open is a
miss (every reader treats ``OSError`` so); removing it after leaves the reader its open file.
A downloaded package is a directory a build reads file by file, and copies files from when it
writes its output, so an automatic prune never takes one used within ``GRACE`` seconds (a lookup
marks its use: ``sources/cache.py``), and never takes a temporary file younger than that (a
write in progress). ``flatten cache clean`` is the user's explicit choice and empties all.

The limit (``FLATTEN_CACHE_MAX_SIZE``, default 1 GiB; 0 turns it off) is applied after a build,
at most once per ``PRUNE_EVERY`` seconds (a stamp file's time), so a build pays one ``stat`` most
of the time; a prune removes the entries written (packages: used) longest ago until the cache is
under 90% of the limit.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DEFAULT_MAX_SIZE",
    "Entry",
    "Usage",
    "clean",
    "entries",
    "format_size",
    "max_size",
    "maybe_prune",
    "parse_size",
    "prune",
    "usage",
]

DEFAULT_MAX_SIZE = 1 << 30  # 1 GiB
GRACE = 3600.0  # seconds: an entry used (a temporary file written) this recently is in use
PRUNE_EVERY = 3600.0  # seconds between automatic prunes
_STAMP = ".pruned"  # its modification time: the last automatic prune
_ENV = "FLATTEN_CACHE_MAX_SIZE"
_PACKAGES = ("v1", "packages")
#: The directories flatten makes in the cache, each written in one module (shell/parse_cache.py,
#: build_cache.py, replay.py, incremental.py, cache_dir.py, memo.py; sources/cache.py for v1/).
#: Nothing else is counted or removed: a FLATTEN_CACHE_DIR set to a directory that holds other
#: things (a home directory, by mistake) keeps them.
_AREAS = frozenset({"parse", "modules", "emit", "builds", "commands", "module-keys", "code", "lark"})
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


@dataclass(frozen=True, slots=True)
class Entry:
    """One thing that can be deleted on its own: a file entry, or a package's directory."""

    path: str  # a str, not a Path: a prune makes thousands, and Path() was most of its time
    area: str  # "parse", "modules", ..., "packages"
    size: int  # bytes on disk, of every file in it
    used: float  # the time it was written (a package: last used), seconds since the epoch
    package: bool = False


@dataclass(frozen=True, slots=True)
class Usage:
    """The cache's place and size, in total and per area (area -> (entries, bytes))."""

    root: Path
    total: int
    count: int
    areas: Mapping[str, tuple[int, int]]


def parse_size(text: str) -> int:
    """Return a size in bytes from ``1073741824``, ``500M``, ``1G``, ``1GiB``, ``2 GB`` (powers of
    1024); raise ``ValueError`` otherwise."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", text.lower())
    if found is None:
        raise ValueError(f"{text!r} is not a size (for example 1G, 500M or 1073741824)")
    return int(float(found.group(1)) * _UNITS[found.group(2)])


def format_size(size: int) -> str:
    """Return ``size`` for a person: ``0 B``, ``812 KiB``, ``1.4 GiB``."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" or value >= 10 else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def max_size(environ: Mapping[str, str]) -> int:
    """Return the size limit: ``FLATTEN_CACHE_MAX_SIZE`` (0: none), else 1 GiB; a value that is
    not a size is the default (a build never fails for it; ``flatten cache`` names it)."""
    text = environ.get(_ENV, "").strip()
    if not text:
        return DEFAULT_MAX_SIZE
    try:
        return parse_size(text)
    except ValueError:
        return DEFAULT_MAX_SIZE


def _disk_size(st: os.stat_result) -> int:
    """The bytes a file takes on disk (what ``du`` counts: whole blocks), else its length."""
    blocks = getattr(st, "st_blocks", None)
    return blocks * 512 if blocks is not None else st.st_size


def _tree_size(path: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += _disk_size(os.lstat(os.path.join(dirpath, name)))
    return total


def entries(root: Path) -> list[Entry]:
    """Return everything in the cache that can be deleted on its own, oldest first."""
    found: list[Entry] = []
    try:
        areas = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return found
    for area in areas:
        if area.name == _PACKAGES[0] and area.is_dir(follow_symlinks=False):
            found += _package_entries(Path(area.path))
        elif area.name in _AREAS and area.is_dir(follow_symlinks=False):
            found += _file_entries(area.path, area.name)
    found.sort(key=lambda e: (e.used, e.path))
    return found


def _file_entries(directory: str, area: str) -> list[Entry]:
    """The entries of one flat directory: a ``stat`` each, and no more (a prune reads thousands)."""
    found: list[Entry] = []
    try:
        items = list(os.scandir(directory))
    except OSError:
        return found
    for item in items:
        try:
            st = item.stat(follow_symlinks=False)
        except OSError:  # removed meanwhile
            continue
        size = _tree_size(Path(item.path)) if stat.S_ISDIR(st.st_mode) else _disk_size(st)
        found.append(Entry(item.path, area, size, st.st_mtime))
    return found


def _package_entries(v1: Path) -> list[Entry]:
    found: list[Entry] = []
    packages = v1.joinpath(*_PACKAGES[1:])
    with contextlib.suppress(OSError):
        for item in os.scandir(packages):
            path = Path(item.path)
            with contextlib.suppress(OSError):
                meta = path / "meta.json"
                used = (meta if meta.exists() else path).stat().st_mtime
                found.append(Entry(str(path), "packages", _tree_size(path), used, package=True))
    with contextlib.suppress(OSError):
        for item in os.scandir(v1 / "tmp"):  # downloads in progress, or left by a killed build
            path = Path(item.path)
            with contextlib.suppress(OSError):
                used = path.lstat().st_mtime
                found.append(Entry(str(path), "packages", _tree_size(path), used, package=True))
    return found


def usage(root: Path) -> Usage:
    """Return where the cache is and how much it holds."""
    areas: dict[str, tuple[int, int]] = {}
    for entry in entries(root):
        count, size = areas.get(entry.area, (0, 0))
        areas[entry.area] = (count + 1, size + entry.size)
    return Usage(
        root,
        sum(size for _, size in areas.values()),
        sum(count for count, _ in areas.values()),
        dict(sorted(areas.items())),
    )


def _remove(entry: Entry) -> bool:
    try:
        if os.path.isdir(entry.path) and not os.path.islink(entry.path):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)
    except OSError:  # another flatten removed it first, or it cannot be removed
        return False
    return True


def clean(root: Path, *, older_than: float | None = None, now: float | None = None) -> tuple[int, int]:
    """Remove every entry (``older_than`` seconds: only those written, or used, longer ago than
    that); return how many entries and bytes were removed."""
    now = time.time() if now is None else now
    count = size = 0
    for entry in entries(root):
        if older_than is not None and entry.used > now - older_than:
            continue
        if _remove(entry):
            count, size = count + 1, size + entry.size
    return count, size


def prune(root: Path, limit: int, *, now: float | None = None) -> tuple[int, int]:
    """Remove the oldest entries until the cache holds at most 90% of ``limit`` bytes, never one
    used within ``GRACE`` seconds; return how many entries and bytes were removed."""
    now = time.time() if now is None else now
    found = entries(root)
    total = sum(e.size for e in found)
    if limit <= 0 or total <= limit:
        return 0, 0
    target = limit * 9 // 10
    count = size = 0
    for entry in found:  # oldest first
        if total - size <= target:
            break
        if entry.used > now - GRACE:
            continue  # perhaps in use by a build running now
        if _remove(entry):
            count, size = count + 1, size + entry.size
    return count, size


def maybe_prune(root: Path, environ: Mapping[str, str], *, now: float | None = None) -> None:
    """After a build: apply the size limit if the last prune was over ``PRUNE_EVERY`` seconds
    ago (one ``stat`` otherwise). Failures are ignored: the cache is an optimisation."""
    limit = max_size(environ)
    if limit <= 0:
        return
    now = time.time() if now is None else now
    stamp = root / _STAMP
    try:
        if stamp.stat().st_mtime > now - PRUNE_EVERY:
            return
    except FileNotFoundError:
        pass
    except OSError:
        return
    try:
        stamp.touch()
        os.utime(stamp, (now, now))
    except OSError:
        return  # no cache directory yet, or not writable: nothing to prune
    prune(root, limit, now=now)
