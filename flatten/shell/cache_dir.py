"""Where flatten's caches live, and the version tag of the code behind a parse result.

A leaf of flatten.shell (it imports nothing of flatten but its version): the parse cache, the
module cache, replay records and the parser's own table cache all start here.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = ["SCHEMA_VERSION", "cache_root", "file_digest", "parser_version"]

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
        import importlib.util

        from flatten.lang.release import __version__

        h = hashlib.blake2b(digest_size=16)
        h.update(f"{SCHEMA_VERSION}:{__version__}:{sys.version_info[:2]}".encode())
        here = Path(__file__).parent.parent  # the package: every module a parse result depends on
        file_digest(here.rglob("*.py"), h)
        for package, names in (("hcl2", ("version.py", "hcl2.lark")), ("lark", ("__init__.py",))):
            spec = importlib.util.find_spec(package)
            if spec is not None and spec.origin:
                file_digest((Path(spec.origin).parent / n for n in names), h)
        _VERSION = h.hexdigest()
    return _VERSION


_VERSION: str | None = None
