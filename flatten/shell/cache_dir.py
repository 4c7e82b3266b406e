"""Where flatten's caches live, and the version tag of the code behind a parse result.

A leaf of flatten.shell (it imports nothing of flatten but its version, cache_auth, the gate,
and cache_admin's stamp for a cache it makes): the parse cache, the module cache, replay records
and the parser's own table cache all start here, and every entry is read and written through
:func:`read_entry`, :func:`write_entry` and :func:`entry_writer`: inside the directory flatten
made and stamped (``CACHEDIR.TAG``), each directory below it reached without following a symlink
(flatten/gate.py; issue 38, item 1). A cache directory that is not flatten's
(``FLATTEN_CACHE_DIR`` set to a home directory) is never written: every entry is a miss.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import BinaryIO

from flatten import gate
from flatten.shell import cache_auth

__all__ = [
    "ENTRY_LIMIT",
    "SCHEMA_VERSION",
    "area",
    "cache_root",
    "code_digest",
    "entry_writer",
    "file_digest",
    "files_digest",
    "open_entry",
    "parser_version",
    "read_entry",
    "write_entry",
]

ENTRY_LIMIT = 1 << 30  # the largest cache entry read back (a module's output of hundreds of MB)

SCHEMA_VERSION = 3  # of parse cache entries: bump when the stored form changes


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """Return flatten's user cache directory (``FLATTEN_CACHE_DIR``, XDG, or ``~/.cache/flatten``)."""
    env = os.environ if environ is None else environ
    if env.get("FLATTEN_CACHE_DIR"):
        return Path(env["FLATTEN_CACHE_DIR"])
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"]) / "flatten"
    return Path.home() / ".cache" / "flatten"


# The cache's directories this process opened: (cache root, area) -> the open directory, or None
# when the root is not flatten's. Only the current root's are kept (tests change it per test).
_AREAS: dict[tuple[str, str], gate.Dir | None] = {}
# The module cache's writer and prefetch's reader are threads that open areas while the build does:
# one thread's insert during another's scan of _AREAS was "dictionary changed size during
# iteration" (a cold build exited 3, once in a property run).
_AREAS_LOCK = threading.Lock()


def area(directory: Path, *, create: bool = True) -> gate.Dir | None:
    """The cache's directory ``directory`` (``<root>/parse``, ``<root>/v1/...``) opened through
    the gate, made (and the root stamped) when missing; None when it cannot be, or the root is not
    flatten's cache (nothing is then read or written there)."""
    with _AREAS_LOCK:
        return _area(directory, create)


def _area(directory: Path, create: bool) -> gate.Dir | None:
    root = os.fspath(cache_root())
    try:
        rel = os.path.relpath(directory, root)
    except ValueError:
        return None
    if rel == os.curdir or rel.startswith(os.pardir):
        return None
    found = _AREAS.get((root, rel), False)
    if found is not False:
        assert found is None or isinstance(found, gate.Dir)
        return found
    for key in [k for k in _AREAS if k[0] != root]:
        stale = _AREAS.pop(key)
        if stale is not None:
            stale.close()
    opened: gate.Dir | None = None
    try:
        made = create and _nothing_at(root)
        top = gate.open_owned_root(root, gate.CACHE_OWNER, create=create, adopt=gate.CACHE_ADOPT)
        if top is not None:
            with top:
                if made:  # this process makes the cache: nothing in it to prune for a while
                    from flatten.shell.cache_admin import stamp_made

                    stamp_made(top)
                opened = top.sub(rel, create=create, mode=0o700, replace_links=create)
    except OSError:
        opened = None
    if opened is not None or create:  # a miss without create is asked again once made
        _AREAS[root, rel] = opened
    return opened


def _forget(directory: Path) -> None:
    """Drop an area whose write failed (removed meanwhile, say): opened again next time."""
    root = os.fspath(cache_root())
    with _AREAS_LOCK:
        found = _AREAS.pop((root, os.path.relpath(directory, root)), None)
    if found is not None:
        found.close()


def _nothing_at(root: str) -> bool:
    """Whether the cache's root is missing or empty (prefetch makes it empty, to mark it for the
    allocator): opening an area there makes the cache."""
    try:
        return not gate.list_dir(root)
    except OSError:
        return gate.kind_of(root) == "missing"


def read_entry(path: Path, *, limit: int = ENTRY_LIMIT) -> bytes | None:
    """Return the bytes of the cache entry at ``path`` (a regular file, not a symlink), or None."""
    directory = area(path.parent, create=False)
    if directory is None:
        return None
    try:
        return directory.read(path.name, limit=limit)
    except OSError:
        return None


@contextlib.contextmanager
def open_entry(path: Path, *, limit: int = ENTRY_LIMIT) -> Iterator[BinaryIO | None]:
    """The cache entry at ``path`` opened for streaming (None when missing or refused)."""
    directory = area(path.parent, create=False)
    if directory is None:
        yield None
        return
    try:
        reader = gate.open_read(path.name, limit=limit, follow=False, dir_fd=directory.fd)
        f = reader.__enter__()
    except OSError:
        yield None
        return
    try:
        yield f
    finally:
        reader.__exit__(None, None, None)


@contextlib.contextmanager
def entry_writer(path: Path) -> Iterator[BinaryIO]:
    """A new cache entry at ``path`` to stream into, in place when the block ends (``OSError``
    when the cache cannot be written: the caller ignores it)."""
    directory = area(path.parent)
    if directory is None:
        raise gate.Refused(1, "not-owned", str(path), "the cache directory is not flatten's", "")
    try:
        with gate.atomic_writer(directory, path.name) as f:
            yield f
    except OSError:
        _forget(path.parent)
        raise


def write_entry(path: Path, data: bytes | Sequence[bytes]) -> bool:
    """Write the cache entry at ``path`` atomically; False (nothing written) on any trouble."""
    try:
        with entry_writer(path) as f:
            for part in (data,) if isinstance(data, bytes) else data:
                f.write(part)
    except OSError:
        return False
    return True


def file_digest(paths: Iterable[Path], h: hashlib.blake2b) -> None:
    """Add each file's name and bytes to ``h``, in sorted order (a missing file adds ``?``)."""
    for path in sorted(paths):
        h.update(path.name.encode())
        try:
            h.update(gate.read_bytes(path))
        except OSError:
            h.update(b"?")


def parser_version() -> str:
    """Return the tag of everything that decides a parse result: the parse cache entries' schema,
    flatten's version and source, python-hcl2's and lark's installed files, Python's version."""
    global _VERSION
    if _VERSION is None:
        from flatten.lang.release import __version__

        h = hashlib.blake2b(digest_size=16)
        h.update(f"{SCHEMA_VERSION}:{__version__}:{sys.version_info[:2]}:{code_digest()}".encode())
        _VERSION = h.hexdigest()
    return _VERSION


_VERSION: str | None = None


def code_digest() -> str:
    """Return the digest of the code: every ``flatten/**/*.py`` (path in the package and bytes)
    and python-hcl2's and lark's files that decide a parse (``files_digest``, kept in
    ``<cache>/code/``)."""
    global _CODE
    if _CODE is None:
        _CODE = files_digest(_code_files(), cache_root() / "code")
    return _CODE


_CODE: str | None = None


def files_digest(files: Sequence[tuple[str, Path]], memo: Path) -> str:
    """Return the digest of each file's name and bytes, in the order given, remembered in
    ``memo`` (a directory) by the files' stats.

    Hashing flatten's source (about 1 MB) took 20 to 30 ms of every build that is not replayed,
    twice (once more for the module cache's tag). The digest is kept under a key of each file's
    name, size, modification and change times and inode: any write, rename, copy or checkout of
    a file changes its change time (which no program can set back), so an edited or reinstalled
    file is hashed again, and unchanged files are only listed and stat'ed. A missing or damaged
    memo is a miss.
    """
    stats = hashlib.blake2b(digest_size=20)
    for name, path in files:
        try:
            st = os.stat(path)
        except OSError:
            stats.update(f"{name}\0?\n".encode("utf-8", "surrogatepass"))
            continue
        line = f"{name}\0{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}\n"
        stats.update(line.encode("utf-8", "surrogatepass"))
    kept = memo / stats.hexdigest()
    data = read_entry(kept, limit=cache_auth.TAG_SIZE + 32) or b""
    # Tagged with the machine's key like every cache entry: a forged memo could otherwise name an
    # older version of the code, whose own (genuine) entries would then be served to this one.
    if len(data) == cache_auth.TAG_SIZE + 32 and cache_auth.verify("code", kept.name, data):
        found = data[cache_auth.TAG_SIZE :].decode("ascii", "replace")
        if all(c in "0123456789abcdef" for c in found):
            return found
    h = hashlib.blake2b(digest_size=16)
    for name, path in files:
        h.update(name.encode("utf-8", "surrogatepass") + b"\0")
        try:
            h.update(gate.read_bytes(path))
        except OSError:
            h.update(b"?")
        h.update(b"\0")
    digest = h.hexdigest()
    _keep(kept, digest)
    _prune(memo)
    return digest


_KEEP_DIGESTS = 16  # memos kept in a ``files_digest`` directory: one per version of the code


def _prune(memo: Path) -> None:
    """Remove all but the ``_KEEP_DIGESTS`` most recently written memos in ``memo`` (each edit of
    a checkout adds one; a few flattens sharing one cache each keep theirs)."""
    directory = area(memo, create=False)
    if directory is None:
        return
    found = []
    for entry in directory.list():
        if entry.kind == "file" and not entry.name.startswith("."):
            with contextlib.suppress(OSError):
                found.append((directory.stat(entry.name).st_mtime_ns, entry.name))
    found.sort(reverse=True)
    for _, name in found[_KEEP_DIGESTS:]:
        with contextlib.suppress(OSError):
            directory.unlink(name)


def _code_files() -> list[tuple[str, Path]]:
    """Return the files ``code_digest`` covers, each with its name, in a fixed order."""
    import importlib.util

    here = Path(__file__).parent.parent  # the package: every module a parse result depends on
    out = []
    stack = [here]
    while stack:  # os.scandir: a tenth of the time of Path.rglob for the same listing
        directory = stack.pop()
        try:
            entries = gate.list_dir(directory)
        except OSError:
            continue
        for entry in entries:
            path = directory / entry.name
            if entry.name.endswith(".py") and entry.kind == "file":
                out.append((path.relative_to(here).as_posix(), path))
            elif entry.kind == "dir" and not entry.name.startswith((".", "__pycache__")):
                stack.append(path)
    out.sort()
    for package, names in (("hcl2", ("version.py", "hcl2.lark")), ("lark", ("__init__.py",))):
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.origin:
            out.extend((f"<{package}>/{n}", Path(spec.origin).parent / n) for n in names)
    return out


def _keep(path: Path, digest: str) -> None:
    """Write ``digest``, tagged, to ``path`` (atomically); failures are ignored, and without a key
    nothing is kept (nothing could verify it)."""
    if cache_auth.key() is None:
        return
    write_entry(path, cache_auth.seal("code", path.name, digest.encode("ascii")))
