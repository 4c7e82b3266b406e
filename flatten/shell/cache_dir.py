"""Where flatten's caches live, and the version tag of the code behind a parse result.

A leaf of flatten.shell (it imports nothing of flatten but its version and cache_auth): the parse cache, the
module cache, replay records and the parser's own table cache all start here.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from flatten.shell import cache_auth

__all__ = ["SCHEMA_VERSION", "cache_root", "code_digest", "file_digest", "files_digest", "parser_version"]

SCHEMA_VERSION = 3  # of parse cache entries: bump when the stored form changes


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """Return flatten's user cache directory (``FLATTEN_CACHE_DIR``, XDG, or ``~/.cache/flatten``)."""
    env = os.environ if environ is None else environ
    if env.get("FLATTEN_CACHE_DIR"):
        return Path(env["FLATTEN_CACHE_DIR"])
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"]) / "flatten"
    return Path.home() / ".cache" / "flatten"


def file_digest(paths: Iterable[Path], h: hashlib.blake2b) -> None:
    """Add each file's name and bytes to ``h``, in sorted order (a missing file adds ``?``)."""
    for path in sorted(paths):
        h.update(path.name.encode())
        try:
            h.update(path.read_bytes())
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
    try:
        with open(kept, "rb") as f:
            data = f.read(cache_auth.TAG_SIZE + 33)
    except OSError:
        data = b""
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
            h.update(path.read_bytes())
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
    try:
        found = [(e.stat().st_mtime_ns, e.path) for e in os.scandir(memo) if not e.name.startswith(".")]
    except OSError:
        return
    found.sort(reverse=True)
    for _, path in found[_KEEP_DIGESTS:]:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _code_files() -> list[tuple[str, Path]]:
    """Return the files ``code_digest`` covers, each with its name, in a fixed order."""
    import importlib.util

    here = Path(__file__).parent.parent  # the package: every module a parse result depends on
    out = []
    stack = [here]
    while stack:  # os.scandir: a tenth of the time of Path.rglob for the same listing
        directory = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if entry.name.endswith(".py") and entry.is_file():
                out.append((Path(entry.path).relative_to(here).as_posix(), Path(entry.path)))
            elif entry.is_dir() and not entry.name.startswith((".", "__pycache__")):
                stack.append(Path(entry.path))
    out.sort()
    for package, names in (("hcl2", ("version.py", "hcl2.lark")), ("lark", ("__init__.py",))):
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.origin:
            out.extend((f"<{package}>/{n}", Path(spec.origin).parent / n) for n in names)
    return out


def _keep(path: Path, digest: str) -> None:
    """Write ``digest``, tagged, to ``path`` (a temporary file renamed into place); failures are
    ignored, and without a key nothing is kept (nothing could verify it)."""
    if cache_auth.key() is None:
        return
    tmp = path.parent / f".{path.name}.{os.getpid()}.tmp"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(cache_auth.seal("code", path.name, digest.encode("ascii")))
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
