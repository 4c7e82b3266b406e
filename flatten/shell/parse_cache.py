"""The parse cache: each file's ``(Body, Diagnostics)`` by content, so a rebuild re-parses only changes.

Rule for the whole file: a cache entry is only ever a pure function of its key. The key is a
digest of the file's text, its display name (ranges embed it), its syntax, the dialect and the
parser version (``SCHEMA_VERSION``, flatten's version, python-hcl2's and lark's installed files,
and the source of flatten's own modules, so an edited checkout never reads stale entries).
Entries live in the user cache directory (``FLATTEN_CACHE_DIR``, else ``$XDG_CACHE_HOME/flatten``,
else ``~/.cache/flatten``; subdirectory ``parse/``); ``FLATTEN_PARSE_CACHE=off`` turns it off.
Writes go to a temporary file renamed into place, so concurrent builds never see half an entry;
an unreadable or corrupt entry is ignored and rewritten. Nothing here raises for cache trouble.
Every entry and build record carries a tag made with this machine's key (flatten.shell.cache_auth): one
whose tag does not verify is a miss and is never unpickled; without a key the cache is off.

flatten.shell.prefetch fills the cache (and ``remember``'s memory) ahead of a build. This module
imports no more of flatten than the options and flatten.syntax.sourcetext, so a replayed build
(flatten.shell.replay, which needs ``cache_root`` and ``parser_version``) starts without loading
the model.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import pickle
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from flatten.lang.options import Dialect, Options
from flatten.shell import cache_auth
from flatten.shell.cache_dir import SCHEMA_VERSION, cache_root, parser_version, read_entry, write_entry
from flatten.syntax.sourcetext import SourceText

if TYPE_CHECKING:
    from flatten.lang.diagnostics import Diagnostics
    from flatten.lang.model import Body

__all__ = [
    "SCHEMA_VERSION",
    "ParseCache",
    "cache_root",
    "default_cache",
    "encode",
    "file_entries",
    "forget_prefetched",
    "module_sources",
    "parse_cached",
    "parse_file",
    "parser_version",
    "remember",
]

_MAGIC = b"flatten-parse-3\n"

Result = tuple["Body", "Diagnostics"]


class ParseCache:
    """Entries under ``directory`` (``<root>/parse``): ``<key>``, one file per parse (no
    subdirectories: see build_cache's docstring)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def key(self, text: str, name: str, syntax: str, dialect: Dialect) -> str:
        h = hashlib.blake2b(digest_size=20)
        h.update(f"{parser_version()}\0{syntax}\0{dialect.value}\0{name}\0".encode("utf-8", "surrogatepass"))
        # The text alone (a native file's SourceText without its sentinel), a megabyte at a time:
        # encoding a large file whole held a second copy of it.
        end = len(text) - 1 if isinstance(text, SourceText) else len(text)
        for at in range(0, end, _HASH_CHUNK):
            h.update(text[at : min(at + _HASH_CHUNK, end)].encode("utf-8", "surrogatepass"))
        return h.hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / key

    def read(self, key: str) -> tuple[tuple[str, ...], bytes, int] | None:
        """Return a verified entry's module sources, bytes and result offset, or None."""
        data = read_entry(self._path(key))
        if data is None:
            return None
        # Only an entry this machine's key tagged is ever unpickled (its bytes may be anyone's).
        if not data.startswith(_MAGIC) or not cache_auth.verify("parse", key, data, len(_MAGIC)):
            return None
        return _split(data, key)

    def load(self, key: str) -> Result | None:
        """Return the stored result for ``key``, or None (missing or unreadable: parse again)."""
        found = self.read(key)
        return None if found is None else _decode(found)

    def calls(self, key: str) -> tuple[str, ...] | None:
        """Return the module sources recorded with ``key``'s entry, or None when it is missing."""
        found = self.read(key)
        return None if found is None else found[0]

    def store(self, key: str, result: Result) -> tuple[str, ...]:
        """Write ``result`` under ``key`` (atomically; failures are ignored) and return its module sources.

        Encoded straight into the file (build_cache.write_sealed): the entry's bytes are never
        held beside the parse they encode.
        """
        from flatten.shell.build_cache import write_sealed

        calls = module_sources(result[0])
        header = pickle.dumps((key, calls), protocol=pickle.HIGHEST_PROTOCOL)
        head = len(header).to_bytes(4, "big") + header
        write_sealed(
            self._path(key), _MAGIC, (("parse", -1),), key, head, result, [result[0].items], lazy=False
        )
        return calls

    def write(self, key: str, data: bytes) -> None:
        """Write an encoded entry: a temporary file renamed into place (failures are ignored)."""
        from flatten.shell.build_cache import storable

        if not storable(data):
            return
        write_entry(self._path(key), data)


def encode(key: str, result: Result) -> tuple[tuple[str, ...], bytes]:
    """Return a result's module sources and its entry bytes: the magic, the tag, then a header
    (key and sources) and the result."""
    calls = module_sources(result[0])
    header = pickle.dumps((key, calls), protocol=pickle.HIGHEST_PROTOCOL)
    from flatten.shell.build_cache import sealed  # one buffer, no copies of a large entry

    head = len(header).to_bytes(4, "big") + header
    # The file's items apart, in parts (build_cache.dump_parts): no memo spans the whole file.
    return calls, sealed(_MAGIC, (("parse", -1),), key, head, result, lazy=False, parts=[result[0].items])


def _split(data: bytes, key: str) -> tuple[tuple[str, ...], bytes, int] | None:
    """Return the sources, bytes and result offset of an entry whose tag was verified (``read``),
    or that this process or one it started made (prefetch)."""
    try:
        if not data.startswith(_MAGIC):
            return None
        at = len(_MAGIC) + cache_auth.TAG_SIZE
        size = int.from_bytes(data[at : at + 4], "big")
        stored, calls = pickle.loads(data[at + 4 : at + 4 + size])
        if stored != key:
            return None
        return tuple(calls), data, at + 4 + size
    except Exception:  # a corrupt entry is a miss
        return None


def _decode(found: tuple[tuple[str, ...], bytes, int]) -> Result | None:
    from flatten.lang.diagnostics import Diagnostics
    from flatten.lang.model import Body
    from flatten.shell.build_cache import load_parts

    _, data, at = found
    try:
        value = load_parts(memoryview(data)[at:])  # a view: no copy of the entry
    except Exception:
        return None
    if not isinstance(value, tuple) or len(value) != 2:
        return None
    body, diags = value
    if not isinstance(body, Body) or not isinstance(diags, Diagnostics):
        return None
    return body, diags


def module_sources(body: Body) -> tuple[str, ...]:
    """Return the sources of the module calls in ``body`` (what prefetch follows)."""
    out = []
    for block in body.blocks_of("module"):
        attr = block.body.attribute("source")
        if attr is not None and isinstance(attr.value, str):
            out.append(attr.value)
    return tuple(out)


_CACHE: dict[str, ParseCache | None] = {}
_MEMO: dict[str, Result | bytes] = {}  # read by prefetch (parsed here, or entry bytes), taken by the build


def remember(key: str, value: Result | bytes) -> None:
    """Keep a parse (or an entry's verified bytes) in memory for the build, which takes it once."""
    _MEMO[key] = value


def forget_prefetched() -> None:
    """Drop the parses prefetch kept for a build that is over (keyed by content: never stale,
    but no longer anyone's to take)."""
    _MEMO.clear()


def default_cache() -> ParseCache | None:
    """Return the cache the environment names, or None when it is turned off."""
    if "cache" not in _CACHE:
        off = os.environ.get("FLATTEN_PARSE_CACHE", "").lower() in ("0", "off", "no", "false")
        if off or cache_auth.key() is None:  # without a key, entries could be neither tagged nor trusted
            _CACHE["cache"] = None
        else:
            _CACHE["cache"] = ParseCache(cache_root() / "parse")
    return _CACHE["cache"]


def parse_file(
    text: str, name: str, syntax: str, dialect: Dialect, compute: Callable[[], Result] | None = None
) -> Result:
    """Parse one file, uncached (with ``compute``, the stage's own parse, when the memo gives one)."""
    options = Options(dialect=dialect)
    was_enabled = gc.isenabled()
    gc.disable()  # parsing allocates many small objects and frees none of them (notes §1.7)
    try:
        if compute is not None:  # the stage's own parse (flatten.stages.load._parse), through the memo
            return compute()
        if syntax == "json":
            from flatten.syntax.jsonsyntax import parse_json

            return parse_json(text, name, options=options)
        from flatten.syntax.hcl_fast import parse

        return parse(text, name, options=options)
    finally:
        if was_enabled:
            gc.enable()


def parse_cached(
    text: str, name: str, syntax: str, *, options: Options, compute: Callable[[], Result] | None = None
) -> Result:
    """Return the file parsed (``syntax`` "native" or "json"), from the cache when it holds it.

    The same result as parsing directly; the cache only saves the work. ``compute`` parses when
    the cache cannot answer (the memo passes the stage's parse, flatten/shell/memo.py).
    """
    cache = default_cache()
    if cache is None:
        return parse_file(text, name, syntax, options.dialect, compute)
    key = cache.key(text, name, syntax, options.dialect)
    memo = _MEMO.pop(key, None)
    if isinstance(memo, bytes):
        split = _split(memo, key)
        memo = None if split is None else _decode(split)
    if memo is not None:
        return memo
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        found = cache.load(key)
    finally:
        if was_enabled:
            gc.enable()
    if found is not None:
        return found
    result = parse_file(text, name, syntax, options.dialect, compute)
    if _STORE[0]:
        cache.store(key, result)
    return result


# False while prefetch computes whole modules in parallel: their module-cache entries hold every
# file's parse, so per-file entries are only written for modules built again after an edit.
_STORE = [True]
_HASH_CHUNK = 1 << 20  # characters of a file's text encoded at a time to key it


@contextlib.contextmanager
def file_entries(store: bool) -> Iterator[None]:
    """Within the block, write (or not) a per-file entry for each file parsed (prefetch decides)."""
    was, _STORE[0] = _STORE[0], store
    try:
        yield
    finally:
        _STORE[0] = was
