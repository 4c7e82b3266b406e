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

Only what flatten made is counted or removed (issue 38, items 1, 2 and 11): the cache directory
must carry flatten's stamp (``CACHEDIR.TAG``, written when flatten made the directory:
``gate.open_owned_root``), every directory below it is reached without following a symlink
(``gate.Dir``), a file entry's name is a key in flatten's format (hex digits), a package is a
directory holding ``meta.json`` or ``files``, and a tree is removed by descriptors
(``shutil.rmtree(dir_fd=)``). A symlink where an area or an entry should be is removed as a link,
never followed. Removing packages takes the cache's use lock exclusively (``.use.lock``): a build
holds it shared from its first package lookup until its output is written (sources/cache.py), so
``flatten cache clean`` waits for running builds, and the automatic prune leaves packages alone
while any build uses them.

The limit (``FLATTEN_CACHE_MAX_SIZE``, default 1 GiB; 0 turns it off) is applied after a build,
at most once per ``PRUNE_EVERY`` seconds (a stamp file's time), so a build pays one ``stat`` most
of the time; a prune removes the entries written (packages: used) longest ago until the cache is
under 90% of the limit.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from flatten import gate

__all__ = [
    "DEFAULT_MAX_SIZE",
    "MAX_SIZE_LIMIT",
    "Entry",
    "Usage",
    "clean",
    "entries",
    "format_size",
    "max_size",
    "maybe_prune",
    "parse_days",
    "parse_size",
    "prune",
    "usage",
]

DEFAULT_MAX_SIZE = 1 << 30  # 1 GiB
MAX_SIZE_LIMIT = 1 << 60  # 1 EiB: any larger size is a mistake (and overflowed a float before)
GRACE = 3600.0  # seconds: an entry used (a temporary file written) this recently is in use
PRUNE_EVERY = 3600.0  # seconds between automatic prunes
_STAMP = ".pruned"  # its modification time: the last automatic prune
_USE_LOCK = ".use.lock"  # shared by builds using packages, exclusive while packages are removed
_ENV = "FLATTEN_CACHE_MAX_SIZE"
#: The flat directories of file entries (shell/parse_cache.py, build_cache.py, replay.py,
#: incremental.py, cache_dir.py, memo.py); packages live in v1/ (sources/cache.py).
_AREAS = tuple(sorted(gate.CACHE_AREAS - {"v1"}))
#: A file entry's name: a key (hex digits), a temporary file of one (``.KEY.PID...tmp``), or
#: python-hcl2's grammar table in ``lark/``.
_ENTRY_NAME = re.compile(r"\.?[0-9a-f]{16,128}(\.[0-9]+(\.[0-9a-f]+)*\.tmp)?|hcl2\.lark_cache\.bin")
_PACKAGE_NAME = re.compile(r"[0-9a-f]{64}")
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


@dataclass(frozen=True, slots=True)
class Entry:
    """One thing that can be deleted on its own: a file entry, or a package's directory."""

    path: str  # a str, not a Path: a prune makes thousands, and Path() was most of its time
    area: str  # "parse", "modules", ..., "packages"
    size: int  # bytes on disk, of every file in it
    used: float  # the time it was written (a package: last used), seconds since the epoch
    package: bool = False
    parent: str = ""  # its directory below the cache's root: "parse", "v1/packages", "v1/tmp"
    name: str = ""


@dataclass(frozen=True, slots=True)
class Usage:
    """The cache's place and size, in total and per area (area -> (entries, bytes)).

    ``owned`` is False for a directory that is not flatten's cache (no stamp of flatten's): its
    files are neither counted nor removed."""

    root: Path
    total: int
    count: int
    areas: Mapping[str, tuple[int, int]]
    owned: bool = True


def parse_size(text: str) -> int:
    """Return a size in bytes from ``1073741824``, ``500M``, ``1G``, ``1GiB``, ``2 GB`` (powers of
    1024), at most ``MAX_SIZE_LIMIT``; raise ``ValueError`` otherwise."""
    found = re.fullmatch(r"\s*(\d{1,20}(?:\.\d{1,20})?)\s*([kmgt]?)(?:i?b)?\s*", text.lower())
    if found is None:
        raise ValueError(f"{text[:40]!r} is not a size (for example 1G, 500M or 1073741824)")
    value = float(found.group(1)) * _UNITS[found.group(2)]
    if not math.isfinite(value) or value > MAX_SIZE_LIMIT:
        raise ValueError(f"{text[:40]!r} is larger than any cache (at most {MAX_SIZE_LIMIT} bytes)")
    return int(value)


def parse_days(value: float) -> float:
    """Return ``--older-than``'s days as seconds; raise ``ValueError`` for a value that is not a
    finite number of days from 0 to 100 years (``nan`` once removed everything)."""
    if not math.isfinite(value) or not 0 <= value <= 36525:
        raise ValueError(f"{value} is not a number of days from 0 to 36525")
    return value * 86400


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
    not a size (or over ``MAX_SIZE_LIMIT``) is the default (a build never fails for it;
    ``flatten cache`` names it)."""
    text = environ.get(_ENV, "").strip()
    if not text:
        return DEFAULT_MAX_SIZE
    try:
        return parse_size(text)
    except ValueError:
        return DEFAULT_MAX_SIZE


@contextlib.contextmanager
def _owned(root: Path) -> Iterator[gate.Dir | None]:
    """The cache's root opened, when it is flatten's (stamped); None otherwise."""
    try:
        found = gate.open_owned_root(root, gate.CACHE_OWNER, create=False)
    except OSError:
        found = None
    try:
        yield found
    finally:
        if found is not None:
            found.close()


def _sub(top: gate.Dir, rel: str) -> gate.Dir | None:
    try:
        return top.sub(rel)
    except OSError:  # missing, or a symlink (refused: never followed)
        return None


def _entries(top: gate.Dir) -> list[Entry]:
    found: list[Entry] = []
    for area in _AREAS:
        directory = _sub(top, area)
        if directory is not None:
            with directory:
                found += _file_entries(directory, area)
    v1 = _sub(top, "v1")
    if v1 is not None:
        with v1:
            found += _package_entries(v1)
    found.sort(key=lambda e: (e.used, e.path))
    return found


def entries(root: Path) -> list[Entry]:
    """Return everything in the cache that can be deleted on its own, oldest first (nothing when
    ``root`` is not flatten's cache)."""
    with _owned(root) as top:
        return [] if top is None else _entries(top)


def _file_entries(directory: gate.Dir, area: str) -> list[Entry]:
    """The entries of one flat directory: a ``stat`` each, and no more (a prune reads thousands).
    Only regular files named as flatten names them, and symlinks (removed as links)."""
    found: list[Entry] = []
    for item in directory.list():
        if item.kind not in ("file", "link") or not _ENTRY_NAME.fullmatch(item.name):
            continue
        try:
            st = directory.stat(item.name)
        except OSError:  # removed meanwhile
            continue
        size = directory.size(item.name) if item.kind == "file" else 0
        found.append(Entry(directory.join(item.name), area, size, st.st_mtime, parent=area, name=item.name))
    return found


def _is_package(entry: gate.Dir) -> bool:
    """A package entry as sources/cache.py makes it: ``meta.json`` beside ``files``."""
    return entry.kind("meta.json") == "file" or entry.kind("files") == "dir"


def _package_entries(v1: gate.Dir) -> list[Entry]:
    found: list[Entry] = []
    packages = _sub(v1, "packages")
    if packages is not None:
        with packages:
            for item in packages.list():
                if not _PACKAGE_NAME.fullmatch(item.name) or item.kind not in ("dir", "link"):
                    continue
                with contextlib.suppress(OSError):
                    used = packages.stat(item.name).st_mtime
                    if item.kind == "dir":
                        with packages.sub(item.name) as entry:
                            if not _is_package(entry):
                                continue
                            with contextlib.suppress(OSError):
                                used = entry.stat("meta.json").st_mtime
                    found.append(
                        Entry(
                            packages.join(item.name),
                            "packages",
                            packages.size(item.name),
                            used,
                            package=True,
                            parent="v1/packages",
                            name=item.name,
                        )
                    )
    tmp = _sub(v1, "tmp")  # downloads in progress, or left by a killed build
    if tmp is not None:
        with tmp:
            for item in tmp.list():
                if not item.name.startswith("pkg-") or item.kind not in ("dir", "link"):
                    continue
                with contextlib.suppress(OSError):
                    found.append(
                        Entry(
                            tmp.join(item.name),
                            "packages",
                            tmp.size(item.name),
                            tmp.stat(item.name).st_mtime,
                            package=True,
                            parent="v1/tmp",
                            name=item.name,
                        )
                    )
    return found


def usage(root: Path) -> Usage:
    """Return where the cache is and how much it holds."""
    with _owned(root) as top:
        if top is None:
            return Usage(root, 0, 0, {}, owned=not os.path.lexists(root))
        found = _entries(top)
    areas: dict[str, tuple[int, int]] = {}
    for entry in found:
        count, size = areas.get(entry.area, (0, 0))
        areas[entry.area] = (count + 1, size + entry.size)
    return Usage(
        root,
        sum(size for _, size in areas.values()),
        sum(count for count, _ in areas.values()),
        dict(sorted(areas.items())),
    )


def _remove(top: gate.Dir, entry: Entry, packages_locked: bool) -> bool:
    if entry.package and not packages_locked:
        return False  # a build is using packages now
    directory = _sub(top, entry.parent)
    if directory is None:
        return False
    with directory:
        owned = _is_package if entry.parent == "v1/packages" else None
        try:
            return directory.remove(entry.name, owned=owned)
        except OSError:  # another flatten removed it first, or it cannot be removed, or not ours
            return False


@contextlib.contextmanager
def _packages_lock(top: gate.Dir, *, wait: bool, waiting: Callable[[], None] | None) -> Iterator[bool]:
    """Hold the use lock exclusively (True) while packages are removed; False when it is held by
    a running build and ``wait`` is false."""
    fd: int | None = None
    try:
        fd = top.lock(_USE_LOCK, shared=False, wait=False)
        if fd is None and wait:
            if waiting is not None:
                waiting()
            fd = top.lock(_USE_LOCK, shared=False, wait=True)
    except OSError:
        fd = None
    try:
        yield fd is not None
    finally:
        if fd is not None:
            os.close(fd)


def clean(
    root: Path,
    *,
    older_than: float | None = None,
    now: float | None = None,
    waiting: Callable[[], None] | None = None,
) -> tuple[int, int]:
    """Remove every entry (``older_than`` seconds: only those written, or used, longer ago than
    that); return how many entries and bytes were removed. Packages are removed once no build
    uses them (``waiting`` is called first when one does)."""
    now = time.time() if now is None else now
    count = size = 0
    with _owned(root) as top:
        if top is None:
            return 0, 0
        found = _entries(top)
        wanted = [e for e in found if older_than is None or e.used <= now - older_than]
        need_lock = any(e.package for e in wanted)
        with _packages_lock(top, wait=need_lock, waiting=waiting) as locked:
            for entry in wanted:
                if _remove(top, entry, locked):
                    count, size = count + 1, size + entry.size
    return count, size


def prune(root: Path, limit: int, *, now: float | None = None) -> tuple[int, int]:
    """Remove the oldest entries until the cache holds at most 90% of ``limit`` bytes (0: remove
    what may be removed), never one used within ``GRACE`` seconds, and packages only while no
    build uses them; return how many entries and bytes were removed."""
    now = time.time() if now is None else now
    with _owned(root) as top:
        if top is None:
            return 0, 0
        found = _entries(top)
        total = sum(e.size for e in found)
        if limit < 0 or (limit and total <= limit):
            return 0, 0
        target = limit * 9 // 10
        count = size = 0
        with _packages_lock(top, wait=False, waiting=None) as locked:
            for entry in found:  # oldest first
                if total - size <= target:
                    break
                if entry.used > now - GRACE:
                    continue  # perhaps in use by a build running now
                if _remove(top, entry, locked):
                    count, size = count + 1, size + entry.size
    return count, size


def stamp_made(top: gate.Dir) -> None:
    """Stamp a cache made just now (``cache_dir``, opening its first area) as pruned now: until
    ``PRUNE_EVERY`` has passed every entry in it was written within ``GRACE`` seconds, so an
    automatic prune could remove nothing. A cold build's prune walked all its own entries (600 for
    the 200-module benchmark tree, 7-9 ms after the output was swapped in). A cache restored or
    adopted into an existing directory is not stamped here: its entries may be old."""
    with contextlib.suppress(OSError):
        top.touch(_STAMP)


def maybe_prune(root: Path, environ: Mapping[str, str], *, now: float | None = None) -> None:
    """After a build: apply the size limit if the last prune was over ``PRUNE_EVERY`` seconds
    ago (one ``stat`` otherwise). Failures are ignored: the cache is an optimisation."""
    limit = max_size(environ)
    if limit <= 0:
        return
    now = time.time() if now is None else now
    with _owned(root) as top:
        if top is None:
            return
        try:
            if top.stat(_STAMP).st_mtime > now - PRUNE_EVERY:
                return
        except FileNotFoundError:
            pass
        except OSError:
            return
        try:
            top.touch(_STAMP, times=(now, now))
        except OSError:
            return  # not writable, or not a file: nothing to prune
    prune(root, limit, now=now)
