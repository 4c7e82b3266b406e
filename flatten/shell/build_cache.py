"""The module cache: each module directory's loaded files and merged module, by content.

A rebuild after one edit should redo only the module that changed. ``load_module`` (load.py:
``load_dir``, then ``merge_module``) is a pure function of a module directory's configuration files (their
names relative to the build root, syntax, override flag and bytes), the directory's display path
and the options, so its results are stored together, in one entry, under a digest of exactly
those inputs and of the code that computes them (``version``: every flatten source file,
python-hcl2's and lark's files, Python's version). Rule for the whole file: an entry is only ever
a pure function of its key, so a stale entry can never be read; a missing, unreadable or corrupt
entry is a miss and is rewritten.

The stage asks through the memo it is given (flatten/stages/memo.py); the disk-backed memo
(flatten/shell/memo.py) looks entries up here (``take``) and keeps what it computed (``computed``).

Entries live beside the parse cache (``<cache root>/modules/<key>``); writes are a temporary
file renamed into place, so concurrent builds never see half an entry. No subdirectories by key
prefix: a cold build of 200 modules made about 290 of them (module and emit entries), and making
a directory is among the slowest file system calls here (docs/performance.md); ext4, xfs and
btrfs index large directories, so one directory of many entries costs nothing per lookup.
``FLATTEN_PARSE_CACHE=off`` turns this cache off too, ``FLATTEN_MODULE_CACHE=off`` only this one.
Stored files and the merged module are pickled together, so the blocks they share are stored and
rebuilt once. Nothing here raises for cache trouble. Every entry, here and in the emit cache,
carries tags made with this machine's key (flatten.shell.cache_auth), checked just before its bytes are
unpickled or used: one over the header (``entry_calls``, which prefetch reads for every module
without decoding the rest) and one over the whole entry (``decode``); an entry whose tag does not
verify is a miss. Each entry's bytes are thus hashed once per build, where they are decoded.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import hashlib
import hmac
import io
import itertools
import os
import pickle
import sys
import threading
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import IO, Any

from flatten.lang.diagnostics import Diagnostic
from flatten.lang.model import (
    REDUCERS,
    Attribute,
    Block,
    Body,
    Key,
    Module,
    ParsedFile,
    Pos,
    Range,
    make_attribute,
    make_block,
    make_block_at,
    make_body,
    make_expr,
    make_pos,
    make_range,
    make_range_at,
    range_from_key,
    set_body_at,
    set_body_range,
    stored_block,
    stored_body,
)
from flatten.lang.options import Dialect, Options
from flatten.lang.redact import holds_userinfo
from flatten.shell import cache_auth
from flatten.stages.files import DirectoryListing
from flatten.stages.memo import CheckKey, CheckRequest, ModuleChecks

__all__ = [
    "CHECKED",
    "EMITTED",
    "LazyBody",
    "ModuleEntry",
    "computed",
    "dump_parts",
    "dumps",
    "emit_ahead",
    "emit_key",
    "emitted",
    "enabled",
    "entry_calls",
    "export_prefetched",
    "finish",
    "forget_prefetched",
    "import_prefetched",
    "keep_checked",
    "keep_emitted",
    "load_parts",
    "make_attribute",
    "make_block",
    "make_body",
    "make_expr",
    "make_lazy_block",
    "make_lazy_block_at",
    "make_pos",
    "make_range",
    "make_range_at",
    "module_key",
    "prelisted",
    "preread",
    "take",
    "version",
    "write_checked",
    "write_emitted",
    "write_entry",
    "write_sealed",
]

SCHEMA_VERSION = 5  # bump when the stored form changes
_MAGIC = b"flatten-module-5\n"
_EMIT_MAGIC = b"flatten-emit-1\n"

# The model's fast constructors (flatten.lang.model.make_*) are what entries unpickle through.
_new = object.__new__


# -- bodies decoded on first use ------------------------------------------------------------------
# A rebuild after one edit takes every other module from the cache, and later stages read little
# of them: module calls, provider meta-arguments, the terraform block (their output bytes come from
# the emit cache). Decoding each stored module whole was most of such a rebuild (465,000 positions
# for the 200-module benchmark tree), so an entry keeps the body of each top-level block as its own
# pickle, decoded the first time something reads its items. Those bytes are only ever part of an
# entry whose tag was verified (make_lazy_block is called by unpickling the entry), so they are as
# trusted as the entry.
_BODY_ITEMS = Body.__dict__["items"]  # the slot the dataclass declares


class LazyBody(Body):
    """A block body from a module-cache entry: its items stay pickled until first read.

    It equals, hashes, prints and pickles as the ``Body`` it decodes to. ``attribute`` and
    ``blocks_of`` answer from the stored names, without decoding, when the body has no such
    attribute or block.
    """

    __slots__ = ("_attributes", "_data", "_types")
    _data: bytes | None
    _attributes: tuple[str, ...] | None  # the names of its attributes, and of its blocks' types
    _types: tuple[str, ...] | None

    def __init__(self, *args: object, **kwargs: object) -> None:
        # Only dataclasses.replace() gets here (e.g. merging); the body it makes is an ordinary one.
        Body.__init__(self, *args, **kwargs)  # type: ignore[arg-type]
        _LAZY_DATA.__set__(self, None)
        _LAZY_ATTRS.__set__(self, None)
        _LAZY_TYPES.__set__(self, None)

    @property
    def items(self) -> tuple[Attribute | Block, ...]:
        try:
            return _BODY_ITEMS.__get__(self, Body)  # type: ignore[no-any-return]
        except AttributeError:
            assert self._data is not None  # the slot is only ever unset in a body built from data
            items = pickle.loads(self._data)
            _BODY_ITEMS.__set__(self, items)
            _LAZY_DATA.__set__(self, None)  # decoded: the bytes would only double the body
            return items  # type: ignore[no-any-return]

    @items.setter
    def items(self, value: tuple[Attribute | Block, ...]) -> None:
        _BODY_ITEMS.__set__(self, value)

    def peek_items(self) -> tuple[Attribute | Block, ...]:
        # Decoded for the caller only: emitting reads each body once, and keeping every body it
        # decoded held the whole module beside its output (docs/reliability.md, "Memory").
        try:
            return _BODY_ITEMS.__get__(self, Body)  # type: ignore[no-any-return]
        except AttributeError:
            assert self._data is not None
            return pickle.loads(self._data)  # type: ignore[no-any-return]

    def peek(self) -> Body:
        try:
            _BODY_ITEMS.__get__(self, Body)
        except AttributeError:
            return make_body(self.peek_items(), self.range)
        return self

    def attribute(self, name: str) -> Attribute | None:
        if self._attributes is not None and name not in self._attributes:
            return None
        return Body.attribute(self, name)

    def has_attribute(self, name: str) -> bool:
        if self._attributes is not None:
            return name in self._attributes
        return Body.has_attribute(self, name)

    def item_names(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        if self._attributes is not None and self._types is not None:
            return self._attributes, self._types
        return Body.item_names(self)

    def blocks_of(self, type_: str) -> Iterator[Block]:
        if self._types is not None and type_ not in self._types:
            return iter(())
        return Body.blocks_of(self, type_)

    def stored(self) -> tuple[bytes, tuple[str, ...], tuple[str, ...]] | None:
        """Return the pickled items and the names, when they have not been decoded."""
        if self._data is None or self._attributes is None or self._types is None:
            return None
        try:
            _BODY_ITEMS.__get__(self, Body)
        except AttributeError:
            return self._data, self._attributes, self._types
        return None

    def __repr__(self) -> str:
        return f"Body(items={self.items!r}, range={self.range!r})"

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return make_body, (self.items, self.range)


_LAZY_DATA = LazyBody.__dict__["_data"]
_LAZY_ATTRS = LazyBody.__dict__["_attributes"]
_LAZY_TYPES = LazyBody.__dict__["_types"]


def make_lazy_block(
    type_: str,
    labels: tuple[str, ...],
    data: bytes,
    attributes: tuple[str, ...],
    types: tuple[str, ...],
    body_range: Range | None,
    range: Range,
    label_ranges: tuple[Range, ...],
    origins: tuple[Range, ...],
) -> Block:
    """Return a block whose body's items are ``data`` (pickled by ``dumps``), decoded on first use."""
    body = _new(LazyBody)
    set_body_range(body, body_range)
    _LAZY_DATA.__set__(body, data)
    _LAZY_ATTRS.__set__(body, attributes)
    _LAZY_TYPES.__set__(body, types)
    return make_block(type_, labels, body, range, label_ranges, origins)


def make_lazy_block_at(
    type_: str,
    labels: tuple[str, ...],
    data: bytes,
    attributes: tuple[str, ...],
    types: tuple[str, ...],
    body_file: str | None,
    body_key: Key | None,
    filename: str,
    key: Key,
    label_keys: Key | tuple[Key, ...],
    origins: tuple[Range, ...],
) -> Block:
    """``make_lazy_block`` with the ranges as the body and block store them (model.stored_block):
    no Range is made to save or load a block."""
    body = _new(LazyBody)
    set_body_at(body, body_file, body_key)
    _LAZY_DATA.__set__(body, data)
    _LAZY_ATTRS.__set__(body, attributes)
    _LAZY_TYPES.__set__(body, types)
    return make_block_at(type_, labels, body, filename, key, label_keys, origins)


@functools.lru_cache(maxsize=1024)
def _shared(names: tuple[str, ...]) -> tuple[str, ...]:
    # One tuple for every body with the same names, stored once in an entry and shared when read
    # (a variable block's ("default", "type") would otherwise be one tuple per block).
    return names


def _lazy_block(b: Block) -> tuple[object, tuple[object, ...]]:
    body = b.body
    found = body.stored() if isinstance(body, LazyBody) else None
    if found is not None:
        data, attributes, types = found
    else:
        data = dumps(body.items)
        attributes = tuple(sorted({i.name for i in body.items if isinstance(i, Attribute)}))
        types = tuple(sorted({i.type for i in body.items if isinstance(i, Block)}))
    attributes, types = _shared(attributes), _shared(types)
    return make_lazy_block_at, (
        b.type,
        b.labels,
        data,
        attributes,
        types,
        *stored_body(body),
        *stored_block(b),
        b.origins,
    )


def _fields(obj: object) -> tuple[object, ...]:
    return tuple(getattr(obj, f.name) for f in fields(obj))  # type: ignore[arg-type]


# Frozen slotted dataclasses otherwise pickle through a Python-level __setstate__, which is as slow
# as parsing. Each class here is rebuilt by one call to a module-level function (pickled by name).
DISPATCH: dict[type, Callable[[Any], tuple[object, tuple[object, ...]]]] = {
    Pos: lambda p: (make_pos, (p.line, p.column, p.byte)),
    # The range's own objects as arguments (the pickler's memo keeps every argument tuple).
    Range: lambda r: (range_from_key, (r.filename, r._key)),
    # Each owner of ranges as one call on its stored fields (model.REDUCERS).
    **REDUCERS,
    LazyBody: REDUCERS[Body],
    ParsedFile: lambda f: (ParsedFile, _fields(f)),
    Module: lambda m: (Module, _fields(m)),
    Diagnostic: lambda d: (Diagnostic, _fields(d)),
}


# The same, except that each block met outside another block's body keeps its body pickled on its
# own (LazyBody): how module entries are stored.
LAZY_DISPATCH = {**DISPATCH, Block: _lazy_block}


def dumps(value: object, *, lazy: bool = False) -> bytes:
    """Pickle ``value`` with the model's fast reconstructors (``pickle.loads`` reads it).

    With ``lazy``, the outermost blocks' bodies are stored so that they decode on first use.
    """
    buf = io.BytesIO()
    dump_into(buf, value, lazy=lazy)
    return buf.getvalue()


def dump_into(buf: IO[bytes], value: object, *, lazy: bool = False) -> None:
    """``dumps``, written to ``buf``."""
    pickler = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = LAZY_DISPATCH if lazy else DISPATCH  # type: ignore[assignment]
    pickler.dump(value)


# -- entries in parts -----------------------------------------------------------------------------
# A pickler's memo (and an unpickler's) keeps every object it saved (made) until the whole pickle
# is done: over a module entry that was each block's tuple of arguments and its body's bytes
# beside the model, about half the peak memory of encoding or decoding a large module
# (docs/reliability.md, "Memory"). An entry therefore pickles the items of its ``runs`` (tuples it
# holds: a file's top-level items, the module's blocks) in parts of ``PART_ITEMS``, each part a
# pickle with its own memo, and then the rest of the value, where each run is a reference
# (pickle's persistent ids) to a list of places in the parts: an item that two runs hold (a
# block of a file that the module keeps) is stored and decoded once.
PART_ITEMS = 1024


class _Skeleton(pickle.Pickler):
    """Pickles a value with each tuple in ``runs`` (by id) saved as its index there, and each
    dict in ``apart`` as -1 - its index there."""

    def __init__(self, out: IO[bytes], runs: dict[int, int], apart: dict[int, int], *, lazy: bool) -> None:
        super().__init__(out, protocol=pickle.HIGHEST_PROTOCOL)
        self.dispatch_table = LAZY_DISPATCH if lazy else DISPATCH  # type: ignore[assignment]
        self._runs = runs
        self._apart = apart

    def persistent_id(self, obj: object) -> int | None:
        cls = obj.__class__
        if cls is tuple:
            return self._runs.get(id(obj))
        if cls is dict:
            found = self._apart.get(id(obj))
            return None if found is None else -1 - found
        return None


class _SkeletonLoader(pickle.Unpickler):
    def __init__(self, data: IO[bytes], runs: list[tuple[object, ...]], apart: list[object]) -> None:
        super().__init__(data)
        self._runs = runs
        self._apart = apart

    def persistent_load(self, pid: object) -> object:
        assert isinstance(pid, int)
        return self._runs[pid] if pid >= 0 else self._apart[-1 - pid]


def _places(runs: Sequence[tuple[object, ...]]) -> tuple[list[object], list[array[int]]]:
    """Return the distinct items of ``runs`` in order of first appearance, and each run's places
    in them. Items are told apart by identity, through sorted arrays of their ids (a dict of
    100,000 ids and places took 12 MB beside the model; these take 2)."""
    if sum(map(len, runs)) < 4 * PART_ITEMS:  # small: a dict is faster, and its size does not matter
        seen: dict[int, int] = {}
        found: list[object] = []
        small: list[array[int]] = []
        for run in runs:
            place = array("q")
            for item in run:
                j = seen.get(id(item))
                if j is None:
                    j = seen[id(item)] = len(found)
                    found.append(item)
                place.append(j)
            small.append(place)
        return found, small
    ids = array("Q", map(id, itertools.chain.from_iterable(runs)))
    order = sorted(range(len(ids)), key=ids.__getitem__)  # stable: the first of equal ids first
    sorted_ids = array("Q", (ids[i] for i in order))
    first = array("Q", order)
    del order
    items: list[object] = []
    place = array("q", bytes(8 * len(ids)))  # each position's place among the distinct items
    at = 0
    for run in runs:
        for item in run:
            j = first[bisect.bisect_left(sorted_ids, ids[at])]
            if j == at:
                place[at] = len(items)
                items.append(item)
            else:
                place[at] = place[j]
            at += 1
    places = []
    at = 0
    for run in runs:
        places.append(place[at : at + len(run)])
        at += len(run)
    return items, places


def dump_parts(
    out: IO[bytes],
    value: object,
    runs: Sequence[tuple[object, ...]],
    *,
    lazy: bool,
    apart: Sequence[dict[str, Any]] = (),
) -> None:
    """Write ``value`` to ``out`` with the items of ``runs`` (tuples it holds) pickled apart,
    ``PART_ITEMS`` at a time (``load_parts`` reads it): the number of parts, each part's size and
    pickle, the number of runs, each run's size and places, the number of dicts ``apart`` (dicts
    it holds), each one's size and pickle, then the rest. Only ``write`` is called: ``out`` may be
    a file being tagged as it is written (``write_sealed``).

    The rest is pickled by ``_Skeleton``, whose ``persistent_id`` is Python called once for each
    object it saves: a module's scan record (``Module.scans``, thousands of ``Reference`` parts)
    was 97% of those calls, about 519,000 of them in the workers of hier 200's cold build
    (docs/performance.md, "Ninth round"). Pickled apart, it costs one."""
    items, places = _places(runs)
    starts = range(0, len(items), PART_ITEMS)
    out.write(len(starts).to_bytes(4, "big"))
    for start in starts:
        data = dumps(tuple(items[start : start + PART_ITEMS]), lazy=lazy)
        out.write(len(data).to_bytes(8, "big"))
        out.write(data)
        del data
    del items
    out.write(len(runs).to_bytes(4, "big"))
    for place in places:
        out.write(len(place).to_bytes(8, "big"))
        out.write(place.tobytes())
    out.write(len(apart).to_bytes(4, "big"))
    for whole in apart:
        data = dumps(whole, lazy=lazy)
        out.write(len(data).to_bytes(8, "big"))
        out.write(data)
        del data
    runs_at = {id(run): k for k, run in enumerate(runs)}
    _Skeleton(out, runs_at, {id(whole): k for k, whole in enumerate(apart)}, lazy=lazy).dump(value)


def load_parts(data: memoryview) -> object:
    """Return the value ``dump_parts`` wrote into ``data`` (a view: the parts are not copied)."""
    count = int.from_bytes(data[:4], "big")
    at = 4
    items: list[object] = []
    for _ in range(count):
        size = int.from_bytes(data[at : at + 8], "big")
        part = data[at + 8 : at + 8 + size]
        if len(part) != size:
            raise ValueError("truncated entry")
        items.extend(pickle.loads(part))  # each part's memo is dropped before the next
        at += 8 + size
    runs: list[tuple[object, ...]] = []
    count = int.from_bytes(data[at : at + 4], "big")
    at += 4
    for _ in range(count):
        size = int.from_bytes(data[at : at + 8], "big")
        at += 8
        place = array("q")
        place.frombytes(data[at : at + 8 * size])
        if len(place) != size:
            raise ValueError("truncated entry")
        runs.append(tuple([items[i] for i in place]))
        at += 8 * size
    del items
    apart: list[object] = []
    count = int.from_bytes(data[at : at + 4], "big")
    at += 4
    for _ in range(count):
        size = int.from_bytes(data[at : at + 8], "big")
        part = data[at + 8 : at + 8 + size]
        if len(part) != size:
            raise ValueError("truncated entry")
        apart.append(pickle.loads(part))
        at += 8 + size
    return _SkeletonLoader(io.BytesIO(data[at:]), runs, apart).load()


class _Tee:
    """A file that also gives what is written to it to the tags being made over it, and refuses
    (``ValueError``: the entry is not written) a piece that holds a URL's userinfo (``storable``)."""

    def __init__(self, out: IO[bytes], taggers: list[hmac.HMAC]) -> None:
        self.out = out
        self.taggers = taggers

    def write(self, data: bytes | memoryview) -> int:
        # The pickler writes whole opcodes (a frame of them, or one large string alone), so a
        # string is never split between two pieces: scanning each is scanning the entry.
        if holds_userinfo(data if isinstance(data, bytes) else bytes(data)):
            raise ValueError("an entry holding a URL's userinfo is not stored")
        for t in self.taggers:
            t.update(data)
        return self.out.write(data)


def write_sealed(
    path: Path,
    magic: bytes,
    tags: tuple[tuple[str, int], ...],
    key: str,
    head: bytes,
    value: object,
    runs: Sequence[tuple[object, ...]] | None,
    *,
    lazy: bool,
    apart: Sequence[dict[str, Any]] = (),
) -> bool:
    """Write what ``sealed(..., parts=runs)`` returns into ``path`` (a temporary file renamed into
    place), pickled straight into the file and tagged as it is written: the entry's bytes are never
    held in memory, beside the model they encode (docs/reliability.md, "Memory"). A tag's length
    is -1 (the whole payload) or at most the header's. Returns False, writing nothing, on any
    trouble (no key, a disk error, a URL's userinfo in the entry)."""
    whole = [t for kind, length in tags if length < 0 for t in [cache_auth.tagger(kind, key)]]
    if any(t is None for t in whole) or any(length >= 0 and length > len(head) for _, length in tags):
        return False
    if holds_userinfo(head):  # a module source with a password: never at rest (storable())
        return False
    taggers = [t for t in whole if t is not None]
    from flatten.shell.cache_dir import entry_writer

    try:
        with entry_writer(path) as f:
            f.write(magic)
            f.write(bytes(cache_auth.TAG_SIZE * len(tags)))
            out = _Tee(f, taggers)
            out.write(head)
            if runs is None:
                dump_into(out, value, lazy=lazy)  # type: ignore[arg-type]
            else:
                dump_parts(out, value, runs, lazy=lazy, apart=apart)  # type: ignore[arg-type]
            f.seek(len(magic))
            done = iter(taggers)
            for kind, length in tags:
                f.write(cache_auth.tag(kind, key, head[:length]) if length >= 0 else next(done).digest())
        return True
    except Exception:
        return False


def sealed(
    magic: bytes,
    tags: tuple[tuple[str, int], ...],
    key: str,
    head: bytes,
    value: object,
    *,
    lazy: bool,
    parts: Sequence[tuple[object, ...]] | None = None,
    apart: Sequence[dict[str, Any]] = (),
) -> bytes:
    """Return ``magic``, one tag for each (kind, length) in ``tags`` over the first ``length`` bytes
    (-1: all) of what follows the tags, ``head``, then ``value`` pickled (``dumps``; with
    ``parts``, ``dump_parts`` with those items and the dicts ``apart`` apart).

    The entry is pickled straight after its header into one buffer and the tags are written into
    their place, which ``getvalue`` returns without a copy: concatenating the parts made three
    copies of a large entry at once (docs/reliability.md, "Memory").
    """
    buf = io.BytesIO()
    buf.write(magic)
    buf.write(bytes(cache_auth.TAG_SIZE * len(tags)))
    start = buf.tell()
    buf.write(head)
    if parts is None:
        dump_into(buf, value, lazy=lazy)
    else:
        dump_parts(buf, value, parts, lazy=lazy, apart=apart)
    with buf.getbuffer() as view:
        at = len(magic)
        for kind, length in tags:
            end = len(view) if length < 0 else start + length
            with view[start:end] as payload:
                view[at : at + cache_auth.TAG_SIZE] = cache_auth.tag(kind, key, payload)
            at += cache_auth.TAG_SIZE
    return buf.getvalue()


# -- keys ----------------------------------------------------------------------------------------

_STATE: dict[str, object] = {}


def enabled() -> bool:
    """Return whether the module cache is on (see the module docstring for the switches)."""
    on = _STATE.get("enabled")
    if on is None:
        off = ("0", "off", "no", "false")
        on = not (
            os.environ.get("FLATTEN_PARSE_CACHE", "").lower() in off
            or os.environ.get("FLATTEN_MODULE_CACHE", "").lower() in off
            or cache_auth.key() is None  # entries could be neither tagged nor trusted
        )
        _STATE["enabled"] = on
    return bool(on)


def _directory() -> Path:
    found = _STATE.get("directory")
    if found is None:
        from flatten.shell.cache_dir import cache_root

        found = _STATE["directory"] = cache_root() / "modules"
    assert isinstance(found, Path)
    return found


def version() -> str:
    """Return the tag of the code that computes an entry: flatten's source, parser libraries, Python."""
    found = _STATE.get("version")
    if found is None:
        from flatten.shell.cache_dir import parser_version

        # parser_version covers the whole package's source (each file's path and bytes).
        h = hashlib.blake2b(digest_size=16)
        h.update(f"{SCHEMA_VERSION}:{parser_version()}:{sys.version}\0".encode())
        found = _STATE["version"] = h.hexdigest()
    assert isinstance(found, str)
    return found


def _options_key(options: Options) -> str:
    return repr(tuple((f.name, getattr(options, f.name)) for f in fields(options)))


def module_key(directory: str, files: Sequence[tuple[str, str, bool, bytes]], options: Options) -> str:
    """Return a module's key: its display path, each file's (display name, syntax, override, bytes)
    and the options."""
    h = hashlib.blake2b(digest_size=20)
    head = (version(), directory, _options_key(options), [(n, s, o, len(b)) for n, s, o, b in files])
    h.update(repr(head).encode("utf-8", "surrogatepass"))
    for _, _, _, raw in files:
        h.update(raw)
    return h.hexdigest()


# -- entries -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ModuleEntry:
    """What one entry holds: ``load_dir``'s result and ``merge_module``'s, as computed together."""

    directory: str  # the display path the key covers
    files: tuple[ParsedFile, ...]
    load_diags: tuple[Diagnostic, ...]
    merge_directory: str  # the ``directory`` merge_module was called with
    module: Module
    merge_diags: tuple[Diagnostic, ...]


def module_sources(module: Module) -> tuple[str, ...]:
    """Return the ``source`` of each module call in ``module``, as written."""
    out = []
    for block in module.blocks_of("module"):
        attr = block.body.attribute("source")
        if attr is not None and isinstance(attr.value, str):
            out.append(attr.value)
    return tuple(out)


def encode(key: str, entry: ModuleEntry) -> tuple[tuple[str, ...], bytes]:
    """Return the module sources an entry calls, and its bytes: the magic, the header's tag, the
    whole entry's tag, then the header's size, the header (key, sources) and the entry."""
    calls = module_sources(entry.module)
    header = pickle.dumps((key, calls), protocol=pickle.HIGHEST_PROTOCOL)
    head = len(header).to_bytes(4, "big") + header
    value = (
        entry.directory,
        entry.files,
        entry.load_diags,
        entry.merge_directory,
        entry.module,
        entry.merge_diags,
    )
    return calls, sealed(
        _MAGIC,
        (("module-header", len(head)), ("module", -1)),
        key,
        head,
        value,
        lazy=True,
        parts=_runs(entry),
        apart=(entry.module.scans,),
    )


def _runs(entry: ModuleEntry) -> list[tuple[object, ...]]:
    """The tuples of an entry whose items are stored apart (``dump_parts``)."""
    return [*(f.body.items for f in entry.files), entry.module.blocks]


def _head(key: str, calls: tuple[str, ...]) -> bytes:
    header = pickle.dumps((key, calls), protocol=pickle.HIGHEST_PROTOCOL)
    return len(header).to_bytes(4, "big") + header


def write_entry(key: str, entry: ModuleEntry) -> tuple[str, ...] | None:
    """Write ``key``'s entry to the cache as it is encoded (``write_sealed``: never held as bytes);
    return the module sources it calls, or None when it could not be written."""
    calls = module_sources(entry.module)
    value = (
        entry.directory,
        entry.files,
        entry.load_diags,
        entry.merge_directory,
        entry.module,
        entry.merge_diags,
    )
    head = _head(key, calls)
    tags = (("module-header", len(head)), ("module", -1))
    return (
        calls
        if write_sealed(
            _path(key), _MAGIC, tags, key, head, value, _runs(entry), lazy=True, apart=(entry.module.scans,)
        )
        else None
    )


_HEAD = len(_MAGIC) + 2 * cache_auth.TAG_SIZE  # where the header's size is


def _split(data: bytes, key: str) -> tuple[tuple[str, ...], int] | None:
    """Return the sources and the offset of the entry in ``data`` when its header's tag verifies."""
    try:
        if not data.startswith(_MAGIC) or len(data) < _HEAD + 4:
            return None
        at = _HEAD
        size = int.from_bytes(data[at : at + 4], "big")
        head = memoryview(data)[at : at + 4 + size]
        if len(head) != 4 + size or not hmac.compare_digest(
            cache_auth.tag("module-header", key, head), data[len(_MAGIC) : len(_MAGIC) + cache_auth.TAG_SIZE]
        ):
            return None  # only what this machine's key tagged is unpickled
        stored, calls = pickle.loads(head[4:])
        if stored != key:
            return None
        return tuple(calls), at + 4 + size
    except Exception:  # a corrupt entry is a miss
        return None


def entry_calls(data: bytes, key: str) -> tuple[str, ...] | None:
    """Return the module sources recorded in an entry's header, or None when it is not ``key``'s
    entry (or its header's tag does not verify)."""
    found = _split(data, key)
    return None if found is None else found[0]


def decode(data: bytes, key: str) -> ModuleEntry | None:
    """Return the entry in ``data`` when it is ``key``'s and intact (its tag verifies), else None."""
    if not data.startswith(_MAGIC) or not cache_auth.verify(
        "module", key, data, len(_MAGIC) + cache_auth.TAG_SIZE
    ):
        return None
    found = _split(data, key)
    if found is None:
        return None
    try:
        # A view, not a slice: the entry's bytes are not copied once more while it is decoded.
        value = load_parts(memoryview(data)[found[1] :])
        assert isinstance(value, tuple)
        entry = ModuleEntry(*value)
    except Exception:
        return None
    if not isinstance(entry.module, Module) or not all(isinstance(f, ParsedFile) for f in entry.files):
        return None
    return entry


def _path(key: str) -> Path:
    return _directory() / key


def read(key: str) -> bytes | None:
    """Return the stored bytes of ``key``'s entry, or None (``entry_calls`` and ``decode`` verify them)."""
    from flatten.shell.cache_dir import read_entry

    return read_entry(_path(key))


def write(key: str, data: bytes) -> None:
    """Write an entry: a temporary file renamed into place (failures are ignored)."""
    _write_file(_path(key), data)


def storable(data: bytes) -> bool:
    """Whether an entry may be written: it holds no URL userinfo (a module source's password or
    token; lang/redact.py), since a cache is shared across branches and jobs (docs/reliability.md).
    Such an entry is simply not cached: the file or module is read again by the next build."""
    return not holds_userinfo(data)


def _write_file(path: Path, data: bytes | tuple[bytes, ...]) -> None:
    parts = (data,) if isinstance(data, bytes) else data
    if not all(storable(part) for part in parts):
        return
    # The directory is opened once per process (cache_dir.area): a cold build writes about 400
    # entries into 2 directories, each then one openat and one renameat.
    from flatten.shell.cache_dir import write_entry

    write_entry(path, parts)


# What the background writer takes: an entry's bytes, its parts in order, or a module to encode.
Entry = bytes | tuple[bytes, ...] | ModuleEntry


class _Writer:
    """Encodes and writes entries on a background thread (file creation is slow; it releases the GIL)."""

    def __init__(self) -> None:
        import queue

        self.queue: queue.SimpleQueue[tuple[Path, str, Entry] | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, name="flatten-module-cache", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            path, key, value = item
            try:
                _write_file(path, encode(key, value)[1] if isinstance(value, ModuleEntry) else value)
            except Exception:
                continue

    def close(self) -> None:
        self.queue.put(None)
        self.thread.join()


_WRITER: list[_Writer] = []


def finish() -> None:
    """Wait until every entry queued for writing is written, here, in a forked writer or in a
    helper the build's checks ran in (``forks.later``)."""
    while _WRITER:
        _WRITER.pop().close()
    forks = sys.modules.get("flatten.shell.forks")  # not imported: it started no helper
    if forks is not None:
        forks.reap()


def _queue(path: Path, key: str, value: Entry) -> None:
    if not _WRITER:
        _WRITER.append(_Writer())
    _WRITER[0].queue.put((path, key, value))


def store(key: str, value: bytes | ModuleEntry, *, background: bool = True) -> None:
    """Write ``key``'s entry, on the background writer unless told otherwise."""
    if not background:
        write(key, value if isinstance(value, bytes) else encode(key, value)[1])
        return
    _queue(_path(key), key, value)


# Entries read or computed ahead of the build (parse_cache.prefetch), by key: bytes as read or
# received from a worker, or the entry itself when this process computed it. Taken once.
MEMO: dict[str, bytes | ModuleEntry] = {}
# Keys of the MEMO entries prefetch read from the cache (not computed).
READ: set[str] = set()
# Each module directory's listing as prefetch read it, by (directory, dialect), with the root and
# options it keyed the module under and the module key of the files it read: the build uses both
# instead of listing, reading and hashing again (it then sees each module's files as prefetch read
# them, a moment earlier). The key is taken once (``preread``); the listing stays (``prelisted``).
# With the key, the bytes it was made of, where prefetch noted them for the module's computation
# in this process (``note_read``); never exported to another process.
PREREAD: dict[tuple[str, str], tuple[DirectoryListing, str, str, str, list[bytes] | None]] = {}


def export_prefetched(out: IO[bytes]) -> None:
    """Write what prefetch left for the build in this process (``MEMO``, ``PREREAD``, ``EMITTED``,
    ``CHECKED`` and the code version) to ``out``, for ``import_prefetched`` in another process.

    Entries prefetch only read from the cache (``READ``) are left out: the other process reads
    them from the cache itself when it needs them, faster than receiving them (10 MB for the
    200-module benchmark tree). Pickled straight into ``out``: a large entry is written from its
    own bytes, not copied into one more bytes object first (docs/reliability.md, "Memory").
    """
    memo = {k: v if isinstance(v, bytes) else encode(k, v)[1] for k, v in MEMO.items() if k not in READ}
    preread = {where: (*found[:4], None) for where, found in PREREAD.items()}  # keys, not the bytes
    state = (memo, preread, EMITTED, CHECKED, _STATE.get("version"))
    pickle.dump(state, out, protocol=pickle.HIGHEST_PROTOCOL)


def import_prefetched(data: IO[bytes]) -> None:
    """Take in what ``export_prefetched`` wrote in the process that prefetched for this one.

    ``data`` holds a pickle, so it must come from that process only (parse_cache.prefetch_forked:
    our own fork, through a pipe only the two processes hold); its entries are trusted bytes.
    It is read as it is unpickled, so the entries are not held twice (whole, then each).
    """
    memo, preread, emitted, checks, version = pickle.load(data)
    MEMO.update(memo)
    PREREAD.update(preread)
    EMITTED.update(emitted)
    CHECKED.update(checks)
    if version is not None:
        _STATE.setdefault("version", version)


def forget_prefetched() -> None:
    """Drop what prefetch left for its build (``MEMO``, ``READ``, ``PREREAD``, ``EMITTED``,
    ``CHECKED``).

    It was read for one build: ``PREREAD`` names module directories, not their contents, so a
    later build in the same process (the command line run again in-process, as the tests do; a
    forked prefetch inherits it too) took the listing and the key of files since rewritten and
    loaded that module's old version. A build that stopped before loading a directory prefetch
    had read (an error in the module calling it) left its entry behind (tests/shell/
    test_incremental.py, seed 21). ``MEMO`` and ``EMITTED`` are keyed by content, but a build
    that left them would keep their bytes alive for nothing.
    """
    MEMO.clear()
    READ.clear()
    PREREAD.clear()
    EMITTED.clear()
    CHECKED.clear()


def note_read(
    directory: Path,
    root: Path,
    options: Options,
    listing: DirectoryListing,
    key: str,
    raws: list[bytes] | None = None,
) -> None:
    """Remember the listing prefetch read for a module directory and the key of its files
    (``PREREAD``); with ``raws``, the files' bytes the key was made of, for the module's
    computation in this process (``preread``), which then reads nothing again."""
    PREREAD[(str(directory), options.dialect.value)] = (listing, key, str(root), _options_key(options), raws)


def prelisted(directory: Path, dialect: Dialect) -> DirectoryListing | None:
    """Return the listing prefetch read for this directory, if any (``preread`` may still use it)."""
    found = PREREAD.get((str(directory), dialect.value)) if PREREAD else None
    return None if found is None else found[0]


def preread(
    directory: Path, root: Path, options: Options, listing: DirectoryListing
) -> tuple[str, list[bytes] | None] | None:
    """Return (and forget) the module key prefetch found for this directory, with the bytes it
    was made of when prefetch noted them (``note_read``), when the build is loading it under the
    same root and options from the very listing prefetch read."""
    if not PREREAD:
        return None
    found = PREREAD.pop((str(directory), options.dialect.value), None)
    if found is None or found[0] is not listing or found[2] != str(root) or found[3] != _options_key(options):
        return None
    return found[1], found[4]


def take(key: str, directory: str) -> ModuleEntry | None:
    """Return ``key``'s entry (prefetched, else from the cache) when it is a module ``directory``."""
    value = MEMO.pop(key, None)
    READ.discard(key)
    if value is None:
        value = read(key)
    entry = decode(value, key) if isinstance(value, bytes) else value
    if entry is None or entry.directory != directory or entry.merge_directory != directory:
        return None
    return entry


def computed(key: str, entry: ModuleEntry, captured: list[tuple[str, ModuleEntry]] | None) -> None:
    """Keep an entry the build computed: in ``captured`` when given (a prefetch worker hands it
    to its parent), else written to the cache in the background."""
    if captured is not None:
        captured.append((key, entry))
        return
    store(key, entry)


def emit_key(
    key: str, provenance: bool, directory: str, files: tuple[str, ...], calls: Sequence[object]
) -> str:
    """Return the key of a module's output bytes (see ``emitted``); ``calls`` describes each
    rewritten ``module`` block (``call_change``)."""
    h = hashlib.blake2b(digest_size=20)
    h.update(repr(("emit", key, provenance, directory, files, list(calls))).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _block_head(block: Block) -> tuple[object, ...]:
    """A block's fields but its body (model.Block's slots)."""
    return (block.type, block.labels, block.origins, block._file, block._key, block._labels_at)


def call_change(loaded: Block, written: Block) -> object:
    """What tells ``written`` (a ``module`` block as the output has it) from ``loaded`` (the same
    block in the module as loaded, which the module's key covers), for the emit key: each item of
    its body that is one of ``loaded``'s own items by its place there, any other in full; the
    whole block in full when anything but its items changed.

    The layout rewrites a call's ``source`` and drops a few arguments, and leaves the other items
    the very objects it read: the root of a 200-module tree spent 8 ms on the ``repr`` of its 200
    calls in full, most of it on arguments its key already covers."""
    a, b = loaded.body, written.body
    if _block_head(written) != _block_head(loaded) or (b._file, b._key) != (a._file, a._key):
        return repr(written)
    place = {id(item): i for i, item in enumerate(a.items)}  # ``a`` holds them: no id is reused
    out: list[object] = []
    for item in b.items:
        found = place.get(id(item))
        if found is not None:
            out.append(found)
        elif isinstance(item, Attribute):  # its fields are what it is (model.Attribute's slots)
            out.append((item.name, item.value, item._file, item._key, item._name_at))
        else:
            out.append(repr(item))
    return tuple(out)


def _emit_path(digest: str) -> Path:
    return _directory().parent / "emit" / digest


# Output bytes computed ahead of the layout (by prefetch workers, beside the module entry), by
# emit key; also queued for writing to the emit cache. Taken once.
EMITTED: dict[str, bytes] = {}


def emit_ahead(
    key: str, module: Module, provenance: bool, render: Callable[[Module], bytes]
) -> tuple[str, bytes] | None:
    """Return the emit key and output bytes of a module that calls no other module, or None.

    Only the layout knows where called modules land (it rewrites each call's ``source``), but a
    module without ``module`` blocks is written exactly as merged, so a prefetch worker can emit
    it beside computing its entry, and the build's layout finds the bytes under the same key.
    """
    if any(b.type == "module" for b in module.blocks):
        return None
    return emit_key(key, provenance, module.directory, module.files, ()), render(module)


def keep_emitted(digest: str, data: bytes) -> None:
    """Keep output bytes computed ahead for ``emitted`` (``write_emitted`` stores them)."""
    EMITTED[digest] = data


def write_emitted(digest: str, data: bytes) -> None:
    """Queue output bytes computed ahead for the emit cache."""
    _queue(_emit_path(digest), digest, _EMIT_MAGIC + cache_auth.seal("emit", digest, data))


def _read_emitted(path: Path, digest: str) -> bytes | None:
    """Return the output bytes stored at ``path`` when their tag verifies, else None."""
    # The magic and the tag are read apart from the bytes they precede, which are returned as read:
    # slicing them off the whole file copied the module's output once more (docs/reliability.md).
    from flatten.shell.cache_dir import open_entry

    try:
        with open_entry(path) as f:
            if f is None:
                return None
            head = f.read(len(_EMIT_MAGIC) + cache_auth.TAG_SIZE)
            data = f.read(max(os.fstat(f.fileno()).st_size - len(head), 0))  # read() would grow a copy
    except OSError:
        return None
    if (
        cache_auth.key() is None  # without a key nothing is trusted (cache_auth.verify)
        or len(head) != len(_EMIT_MAGIC) + cache_auth.TAG_SIZE
        or not head.startswith(_EMIT_MAGIC)
        or not hmac.compare_digest(cache_auth.tag("emit", digest, data), head[len(_EMIT_MAGIC) :])
    ):
        return None
    return data


def emitted(
    key: str, original: Module, output: Module, provenance: bool, compute: Callable[[], bytes]
) -> bytes:
    """Return ``compute()`` (a module's output bytes), from the cache when it has them.

    Used by the output layout around ``dumps(module_json(module, provenance=...))``
    (docs/performance.md), through the memo (flatten/shell/memo.py). ``key`` is the module-cache
    key of ``original``, the module the graph holds as loaded, and ``output`` the module written,
    which may differ only in its ``module`` blocks (call sources rewritten). The key of the bytes
    is ``key`` (the module's files, names, options and flatten's source), the output's ``module``
    blocks in full, its directory and files, and ``provenance``; anything else (another block
    changed) is computed.
    """
    if not enabled() or len(output.blocks) != len(original.blocks):
        return compute()
    calls = []
    for a, b in zip(original.blocks, output.blocks, strict=True):
        if a is not b:
            if a.type != "module" or b.type != "module":
                return compute()
            calls.append(call_change(a, b))
    digest = emit_key(key, provenance, output.directory, output.files, calls)
    found = EMITTED.pop(digest, None)
    if found is not None:
        return found
    path = _emit_path(digest)
    stored = _read_emitted(path, digest)
    if stored is not None:
        return stored
    data = compute()
    # Queued as its parts: one sealed copy would hold the module's output bytes twice more until
    # the writer is done with it (docs/reliability.md, "Memory").
    _queue(path, digest, (_EMIT_MAGIC, cache_auth.tag("emit", digest, data), data))
    return data


# -- the checks' cache: each module's part of the validate-level checks -------------------------

_CHECK_MAGIC = b"flatten-checks-1\n"


def check_digest(key: CheckKey) -> str:
    """Return the digest a module's part of the checks is kept under: ``key`` (whose module keys
    name the module's and its caller's files, the options and flatten's code) and the code."""
    h = hashlib.blake2b(digest_size=20)
    h.update(repr(("checks", version(), key)).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _checks_path(digest: str) -> Path:
    return _directory().parent / "checks" / digest


def _write_checks(path: Path, digest: str, value: ModuleChecks) -> bool:
    """Write a module's part of the checks as it is pickled (``write_sealed``): the magic, the tag
    of the pickle, the pickle. Pickled whole into bytes, the part was held twice: a 10 MB
    module's is 2.4 MB of pickle (issue 38, item 13)."""
    return write_sealed(path, _CHECK_MAGIC, (("checks", -1),), digest, b"", value, None, lazy=False)


def _read_checks(path: Path, digest: str) -> ModuleChecks | None:
    """Return the part stored at ``path`` when its tag verifies (then it is our own pickle)."""
    from flatten.shell.cache_dir import open_entry

    try:
        with open_entry(path) as f:
            if f is None:
                return None
            head = f.read(len(_CHECK_MAGIC) + cache_auth.TAG_SIZE)
            data = f.read()
    except OSError:
        return None
    if (
        cache_auth.key() is None
        or len(head) != len(_CHECK_MAGIC) + cache_auth.TAG_SIZE
        or not head.startswith(_CHECK_MAGIC)
        or not hmac.compare_digest(cache_auth.tag("checks", digest, data), head[len(_CHECK_MAGIC) :])
    ):
        return None
    try:
        value = pickle.loads(data)
    except Exception:  # a corrupt entry is a miss
        return None
    return value if isinstance(value, ModuleChecks) else None


# Parts of the checks computed ahead by prefetch's workers (``keep_checked``: modules that call
# none, as they were loaded, flatten/stages/check_parts.py ``leaf_part``), pickled, by digest.
CHECKED: dict[str, bytes] = {}


def keep_checked(digest: str, data: bytes) -> None:
    """Keep a part of the checks computed ahead (its pickle) for ``checked`` (``write_checked``
    stores it)."""
    CHECKED[digest] = data


def write_checked(digest: str, data: bytes) -> None:
    """Queue a part of the checks computed ahead for the cache: a build that does not take it
    (another command, the checks stopped before the parts) leaves it there for the next."""
    _queue(_checks_path(digest), digest, (_CHECK_MAGIC, cache_auth.tag("checks", digest, data), data))


def checked(requests: Sequence[CheckRequest]) -> list[ModuleChecks]:
    """Return each request's ``compute()`` (a module's part of the checks, a pure function of its
    key), from the cache when it has it (flatten/shell/memo.py; the key: flatten/stages/memo.py).

    The parts the cache lacks are computed here and, on a machine of several CPUs, in forked
    helpers at once (``forks.shared``, prefetch's way of sharing work), each part pickled
    where it is computed, which the cache needs anyway. A part computed here is written at once,
    pickled straight into its entry (``_write_checks``): pickled into bytes it was held twice, and
    pickled by the background writer it was while the build rendered its output, both peaks at
    once (issue 38, item 13)."""
    if not enabled():
        return [compute() for _, compute in requests]
    out: list[ModuleChecks | None] = []
    missing: list[tuple[int, str]] = []
    for i, (key, _) in enumerate(requests):
        digest = check_digest(key)
        ahead = CHECKED.pop(digest, None)
        # A pickle from our own prefetching fork (``import_prefetched``): trusted, as its entries.
        found = pickle.loads(ahead) if ahead is not None else _read_checks(_checks_path(digest), digest)
        out.append(found)
        if found is None:
            missing.append((i, digest))
    if missing:
        from flatten.shell import forks

        computes = [requests[i][1] for i, _ in missing]
        shared = forks.shared(computes) if len(computes) >= _SHARED_PARTS else None
        if shared is None:  # too few to share, or no helper can be forked now
            shared = [(compute(), None) for compute in computes]
        pending: list[tuple[str, ModuleChecks, bytes | None]] = []
        for (i, digest), (value, data) in zip(missing, shared, strict=True):
            assert isinstance(value, ModuleChecks)
            out[i] = value
            pending.append((digest, value, data))
        if len(pending) < _SHARED_PARTS or not _write_forked(pending):
            for digest, value, data in pending:
                _write_part(digest, value, data)
    return [value for value in out if value is not None]


def _write_part(digest: str, value: ModuleChecks, data: bytes | None) -> None:
    """Write one computed part: pickled straight into its entry, or from the pickle a helper
    sent it as (``data``)."""
    if data is None:
        _write_checks(_checks_path(digest), digest, value)
    else:
        tag = cache_auth.tag("checks", digest, data)
        _write_file(_checks_path(digest), (_CHECK_MAGIC, tag, data))


def _write_forked(pending: Sequence[tuple[str, ModuleChecks, bytes | None]]) -> bool:
    """Write the parts ``checked`` computed in a forked writer (``forks.detached``), which
    ``finish`` waits for; False where none can be forked (no fork, or another thread running: a
    fork copies a lock another thread may hold).

    Written here, they were 0.06-0.09 s of a cold build's one core before its layout (pickling
    and creating about a hundred files on the 200-module benchmark trees, the helpers' parts
    beside on the writer thread), while the other core, whose helper had computed the rest,
    waited: the writer does it there, beside the layout and the output (docs/performance.md,
    "Ninth round"). It holds the parts as this process did at the fork; the pickles are made in
    it, never here. Its entries are temporary files renamed into place, as every writer's: a
    writer killed with the build (``forks.worker_init``) leaves none half written.
    """
    from flatten.shell import forks

    def write() -> None:
        for digest, value, data in pending:
            with contextlib.suppress(Exception):  # an entry not written is a miss next time
                _write_part(digest, value, data)

    return forks.detached(write)


# Fewer parts to compute than this are computed here alone (a fork costs more than they do).
_SHARED_PARTS = 16
