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

``prefetch`` fills the cache before a build: it follows local module calls from the root and
parses the files the cache lacks in worker processes when there are enough to pay for them
(python-hcl2-notes §1.7). Results are keyed by content, so worker order never shows.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import io
import os
import pickle
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from flatten.lang.diagnostics import Diagnostics
from flatten.lang.model import Body, Module
from flatten.lang.options import Dialect, Options
from flatten.shell import cache_auth

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

    from flatten.stages.files import DirectoryListing

__all__ = [
    "SCHEMA_VERSION",
    "ParseCache",
    "cache_root",
    "encode",
    "finish",
    "parse_cached",
    "prefetch",
    "run_build_command",
]

SCHEMA_VERSION = 2  # bump when the stored form changes
_MAGIC = b"flatten-parse-2\n"

# Parallel parsing pays off above these (measured with scripts/bench, docs/performance.md).
MIN_PARALLEL_FILES = 8
MIN_PARALLEL_BYTES = 32_000
_BATCH_BYTES = 64_000

Result = tuple[Body, Diagnostics]


def _dumps(value: object) -> bytes:
    # Frozen slotted dataclasses pickle through a Python-level __setstate__, which is as slow as
    # parsing; flatten.shell.build_cache rebuilds them through their slots, several times faster.
    from flatten.shell.build_cache import dumps

    return dumps(value)


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """Return flatten's user cache directory (``FLATTEN_CACHE_DIR``, XDG, or ``~/.cache/flatten``)."""
    env = os.environ if environ is None else environ
    if env.get("FLATTEN_CACHE_DIR"):
        return Path(env["FLATTEN_CACHE_DIR"])
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"]) / "flatten"
    return Path.home() / ".cache" / "flatten"


def _file_digest(paths: Iterable[Path], h: hashlib.blake2b) -> None:
    for path in sorted(paths):
        h.update(path.name.encode())
        try:
            h.update(path.read_bytes())
        except OSError:
            h.update(b"?")


def parser_version() -> str:
    """Return the tag of everything that decides a parse result (see the module docstring)."""
    global _VERSION
    if _VERSION is None:
        import importlib.util

        from flatten import __version__

        h = hashlib.blake2b(digest_size=16)
        h.update(f"{SCHEMA_VERSION}:{__version__}:{sys.version_info[:2]}".encode())
        here = Path(__file__).parent.parent  # the package: every module a parse result depends on
        _file_digest(here.rglob("*.py"), h)
        for package, names in (("hcl2", ("version.py", "hcl2.lark")), ("lark", ("__init__.py",))):
            spec = importlib.util.find_spec(package)
            if spec is not None and spec.origin:
                _file_digest((Path(spec.origin).parent / n for n in names), h)
        _VERSION = h.hexdigest()
    return _VERSION


_VERSION: str | None = None


class ParseCache:
    """Entries under ``directory`` (``<root>/parse``): ``<key[:2]>/<key>``, one file per parse."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def key(self, text: str, name: str, syntax: str, dialect: Dialect) -> str:
        h = hashlib.blake2b(digest_size=20)
        h.update(f"{parser_version()}\0{syntax}\0{dialect.value}\0{name}\0".encode("utf-8", "surrogatepass"))
        h.update(text.encode("utf-8", "surrogatepass"))
        return h.hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / key

    def _read(self, key: str) -> tuple[tuple[str, ...], bytes, int] | None:
        try:
            data = self._path(key).read_bytes()
        except OSError:
            return None
        # Only an entry this machine's key tagged is ever unpickled (its bytes may be anyone's).
        if not data.startswith(_MAGIC) or not cache_auth.verify("parse", key, data, len(_MAGIC)):
            return None
        return _split(data, key)

    def load(self, key: str) -> Result | None:
        """Return the stored result for ``key``, or None (missing or unreadable: parse again)."""
        found = self._read(key)
        return None if found is None else _decode(found)

    def calls(self, key: str) -> tuple[str, ...] | None:
        """Return the module sources recorded with ``key``'s entry, or None when it is missing."""
        found = self._read(key)
        return None if found is None else found[0]

    def store(self, key: str, result: Result) -> tuple[str, ...]:
        """Write ``result`` under ``key`` (atomically; failures are ignored) and return its module sources."""
        calls, data = encode(key, result)
        self.write(key, data)
        return calls

    def write(self, key: str, data: bytes) -> None:
        """Write an encoded entry: a temporary file renamed into place (failures are ignored)."""
        tmp: Path | None = None
        try:
            path = self._path(key)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.parent / f".{key}.{os.getpid()}.{threading.get_ident()}.tmp"
            tmp.write_bytes(data)
            os.replace(tmp, path)
        except Exception:
            if tmp is not None:
                tmp.unlink(missing_ok=True)


def encode(key: str, result: Result) -> tuple[tuple[str, ...], bytes]:
    """Return a result's module sources and its entry bytes: the magic, the tag, then a header
    (key and sources) and the result."""
    calls = _module_sources(result[0])
    header = pickle.dumps((key, calls), protocol=pickle.HIGHEST_PROTOCOL)
    payload = len(header).to_bytes(4, "big") + header + _dumps(result)
    return calls, _MAGIC + cache_auth.seal("parse", key, payload)


def _split(data: bytes, key: str) -> tuple[tuple[str, ...], bytes, int] | None:
    """Return the sources, bytes and result offset of an entry whose tag was verified (``_read``),
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
    _, data, at = found
    try:
        body, diags = pickle.loads(data[at:])
    except Exception:
        return None
    if not isinstance(body, Body) or not isinstance(diags, Diagnostics):
        return None
    return body, diags


class _Writer:
    """Writes entries on a background thread (file creation is slow; it releases the GIL)."""

    def __init__(self, cache: ParseCache) -> None:
        import queue

        self.cache = cache
        self.queue: queue.SimpleQueue[tuple[str, bytes | Result] | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, name="flatten-parse-cache", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            key, value = item
            try:
                data = value if isinstance(value, bytes) else encode(key, value)[1]
                self.cache.write(key, data)
            except Exception:
                continue

    def put(self, key: str, value: bytes | Result) -> None:
        self.queue.put((key, value))

    def close(self) -> None:
        self.queue.put(None)
        self.thread.join()


def _module_sources(body: Body) -> tuple[str, ...]:
    out = []
    for block in body.blocks_of("module"):
        attr = block.body.attribute("source")
        if attr is not None and isinstance(attr.value, str):
            out.append(attr.value)
    return tuple(out)


_CACHE: dict[str, ParseCache | None] = {}
_MEMO: dict[str, Result | bytes] = {}  # read by prefetch (parsed here, or entry bytes), taken by the build
_WRITERS: list[_Writer] = []


# Prefetching processes (prefetch_forked), waited for by finish(): process id and pipe.
_CHILDREN: list[tuple[int, io.BufferedReader]] = []


def finish() -> None:
    """Wait until every cache entry ``prefetch`` (or the module cache) queued is written."""
    while _WRITERS:
        _WRITERS.pop().close()
    while _CHILDREN:
        pid, pipe = _CHILDREN.pop()
        # When nothing was taken (the build stopped first), a child still writing to the pipe
        # would wait for a reader forever: closed, its write fails and it exits.
        pipe.close()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    from flatten.shell import build_cache

    build_cache.finish()


def default_cache() -> ParseCache | None:
    """Return the cache the environment names, or None when it is turned off."""
    if "cache" not in _CACHE:
        off = os.environ.get("FLATTEN_PARSE_CACHE", "").lower() in ("0", "off", "no", "false")
        if off or cache_auth.key() is None:  # without a key, entries could be neither tagged nor trusted
            _CACHE["cache"] = None
        else:
            _CACHE["cache"] = ParseCache(cache_root() / "parse")
    return _CACHE["cache"]


def _parse(
    text: str, name: str, syntax: str, dialect: Dialect, compute: Callable[[], Result] | None = None
) -> Result:
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
        return _parse(text, name, syntax, options.dialect, compute)
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
    result = _parse(text, name, syntax, options.dialect, compute)
    if _STORE_PARSES:
        cache.store(key, result)
    return result


# False while prefetch computes whole modules in parallel: their module-cache entries hold every
# file's parse, so per-file entries are only written for modules built again after an edit.
_STORE_PARSES = True


# -- prefetching ---------------------------------------------------------------------------------

_Job = tuple[str, str, str, str, Dialect]  # key, text, name, syntax, dialect


def _work(jobs: list[_Job]) -> list[tuple[str, tuple[str, ...], bytes]]:
    """Worker: parse each job; return each key's module sources and entry bytes."""
    out = []
    for key, text, name, syntax, dialect in jobs:
        calls, data = encode(key, _parse(text, name, syntax, dialect))
        out.append((key, calls, data))
    return out


def _batches(jobs: list[_Job], parts: int) -> list[list[_Job]]:
    total = sum(len(j[1]) for j in jobs)
    size = max(min(_BATCH_BYTES, total // (parts * 4) + 1), 1)
    out: list[list[_Job]] = [[]]
    acc = 0
    for job in sorted(jobs, key=lambda j: -len(j[1])):
        if acc >= size:
            out.append([])
            acc = 0
        out[-1].append(job)
        acc += len(job[1])
    return out


def prefetch(
    root: Path, *, options: Options, workers: int | None = None, meanwhile: Callable[[], object] | None = None
) -> int:
    """Parse into the cache, in parallel, the files a build of ``root`` will read; return how many.

    Follows local module calls (``./``, ``../``) from ``root``, level by level. Only files the
    cache lacks are parsed; below ``MIN_PARALLEL_FILES``/``MIN_PARALLEL_BYTES`` uncached files
    they are left to the build. ``meanwhile`` runs once while the workers parse (the command line
    imports the rest of flatten there). Never raises: any trouble just leaves the work to the build.
    """
    cache = default_cache()
    if cache is None:
        return 0
    from flatten.shell import build_cache

    try:
        if build_cache.enabled():
            return _prefetch_modules(root.absolute(), options, workers, meanwhile)
        return _prefetch(root.absolute(), cache, options, workers, meanwhile)
    except Exception:
        return 0


def prefetch_forked(root: Path, *, options: Options) -> Callable[[], None] | None:
    """Run ``prefetch`` in a forked process; return a function that waits for it and takes in
    what it prefetched, or None where it cannot (no fork, or the module cache is off).

    Meanwhile this process imports the rest of flatten (0.2 s of a rebuild after one edit, which
    prefetches in-process: reading every file and cache entry, parsing the edited file). The
    child may start its own workers. It must be started before anything else runs threads (it is
    forked). It writes the cache entries it computed after handing them over: ``finish`` waits
    for it. Any trouble in the child just leaves the work to the build.
    """
    from flatten.shell import build_cache

    if not hasattr(os, "fork") or not build_cache.enabled() or default_cache() is None:
        return None
    if threading.active_count() > 1:  # a lock another thread holds would stay held in the child
        return None
    read_end, write_end = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 1
        try:
            os.close(read_end)
            _worker_init(parent)
            prefetch(root, options=options)
            with os.fdopen(write_end, "wb") as sending:
                sending.write(build_cache.export_prefetched())
            finish()
            code = 0
        except BaseException:
            pass
        finally:
            os._exit(code)
    os.close(write_end)
    received = os.fdopen(read_end, "rb")
    _CHILDREN.append((pid, received))

    def take() -> None:
        with received:
            data = received.read()
        # A pickle, but from our own fork through a pipe only the two processes hold: trusted
        # (what the child read from the cache it verified first; the rest it computed).
        if data:  # else the child failed: the build computes what it needs
            with contextlib.suppress(Exception):
                build_cache.import_prefetched(data)

    return take


def _prefetch(
    root: Path,
    cache: ParseCache,
    options: Options,
    workers: int | None,
    meanwhile: Callable[[], object] | None,
) -> int:
    from flatten.stages.files import list_config_files
    from flatten.stages.load import display_path

    if workers:
        cpus = workers
    elif hasattr(os, "sched_getaffinity"):
        cpus = len(os.sched_getaffinity(0))
    else:
        cpus = os.cpu_count() or 1
    pool: ProcessPoolExecutor | None = None
    writer = _Writer(cache)
    _WRITERS.append(writer)
    seen = {root.resolve()}
    level = [root]
    done = 0
    try:
        while level:
            jobs: list[_Job] = []
            sources: list[tuple[Path, tuple[str, ...]]] = []
            owner: dict[str, Path] = {}
            for directory in level:
                try:
                    listing = list_config_files(directory, dialect=options.dialect)
                except OSError:
                    continue
                for entry in listing.files:
                    try:
                        text = entry.path.read_bytes().decode("utf-8")
                    except (OSError, UnicodeDecodeError):
                        continue
                    name = display_path(entry.path, root)
                    key = cache.key(text, name, entry.syntax, options.dialect)
                    found = cache._read(key)
                    if found is None:
                        jobs.append((key, text, name, entry.syntax, options.dialect))
                        owner[key] = directory
                    else:
                        _MEMO[key] = found[1]  # verified by _read: the build decodes it from memory
                        sources.append((directory, found[0]))
            if jobs:
                size = sum(len(j[1]) for j in jobs)
                if cpus > 1 and len(jobs) >= MIN_PARALLEL_FILES and size >= MIN_PARALLEL_BYTES:
                    if pool is None:
                        pool = _pool(max(cpus - 1, 1))  # this process is the other worker
                    batches = _batches(jobs, cpus)
                    futures = [pool.submit(_work, b) for b in batches]
                    if meanwhile is not None:
                        meanwhile()
                        meanwhile = None
                    # This process parses too: it takes back batches no worker has started yet,
                    # from the end of the queue, and keeps those results in memory for the build.
                    results = []
                    for future, batch in zip(reversed(futures), reversed(batches), strict=True):
                        if not future.cancel():
                            break
                        for key, text, name, syntax, dialect in batch:
                            result = _parse(text, name, syntax, dialect)
                            _MEMO[key] = result
                            writer.put(key, result)
                            results.append((key, _module_sources(result[0])))
                    for future in futures:
                        if not future.cancelled():
                            # From our own worker processes (through the pool's pipes): trusted.
                            for key, calls, data in future.result():
                                _MEMO[key] = data
                                writer.put(key, data)
                                results.append((key, calls))
                    sources.extend((owner[key], calls) for key, calls in results)
                    done += len(jobs)
                else:
                    # Too little to pay for processes: read them here, for their module calls.
                    for key, text, name, syntax, dialect in jobs:
                        result = _parse(text, name, syntax, dialect)
                        _MEMO[key] = result
                        writer.put(key, result)
                        sources.append((owner[key], _module_sources(result[0])))
            level = _next_level(sources, seen)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    return done


def _next_level(sources: list[tuple[Path, tuple[str, ...]]], seen: set[Path]) -> list[Path]:
    """Return the directories not yet ``seen`` that local module calls in ``sources`` load, sorted.

    ``sources`` pairs each module directory with the sources of its module calls.
    """
    level = []
    for directory, calls in sources:
        for source in calls:
            if not source.startswith(("./", "../")):
                continue
            child = Path(os.path.normpath(directory / source))
            try:
                real = child.resolve()
            except OSError:
                continue
            if real not in seen and child.is_dir():
                seen.add(real)
                level.append(child)
    return sorted(level)


def _cpus(workers: int | None) -> int:
    if workers:
        return workers
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


_ModuleJob = tuple[Path, Path, Options, str]  # directory, root, options, display path


def _compute_modules(jobs: list[_ModuleJob], *, store_parses: bool = False) -> list[tuple[str, object]]:
    """Load and merge each module directory (through load_module and the disk memo, which fill
    the module cache); return the entries computed, by key, instead of storing them. Per-file parse
    entries are written only with ``store_parses`` (the module entry holds every file's parse)."""
    global _STORE_PARSES
    from flatten.shell.build_cache import ModuleEntry
    from flatten.shell.memo import DiskMemo
    from flatten.stages.load import load_module

    captured: list[tuple[str, ModuleEntry]] = []
    memo = DiskMemo(captured=captured)
    was, _STORE_PARSES = _STORE_PARSES, store_parses
    was_enabled = gc.isenabled()
    gc.disable()  # loading allocates many small objects and frees none of them
    try:
        for directory, root, options, _ in jobs:
            load_module(directory, root=root, options=options, memo=memo)
        return list(captured)
    finally:
        _STORE_PARSES = was
        if was_enabled:
            gc.enable()


_Computed = tuple[str, tuple[str, ...], bytes, tuple[str, bytes] | None]


def _work_modules(jobs: list[_ModuleJob]) -> list[_Computed]:
    """Worker: compute each module; return each entry's key, module sources and bytes, and the
    module's output bytes (by emit key) when it calls no other module."""
    from flatten.shell import build_cache
    from flatten.stages.emit import dumps, module_json

    provenance = bool(jobs) and jobs[0][2].provenance  # one build's jobs: the same options

    def render(module: Module) -> bytes:
        return dumps(module_json(module, provenance=provenance)).encode("utf-8")

    out: list[_Computed] = []
    for key, entry in _compute_modules(jobs):
        assert isinstance(entry, build_cache.ModuleEntry)
        calls, data = build_cache.encode(key, entry)
        out.append((key, calls, data, build_cache.emit_ahead(key, entry.module, provenance, render)))
    return out


def _module_batches(jobs: list[tuple[_ModuleJob, int]], parts: int) -> list[list[_ModuleJob]]:
    total = sum(size for _, size in jobs)
    limit = max(min(_BATCH_BYTES, total // (parts * 4) + 1), 1)
    out: list[list[_ModuleJob]] = [[]]
    acc = 0
    for job, size in sorted(jobs, key=lambda j: -j[1]):
        if acc >= limit:
            out.append([])
            acc = 0
        out[-1].append(job)
        acc += size
    return out


def _prefetch_modules(
    root: Path, options: Options, workers: int | None, meanwhile: Callable[[], object] | None
) -> int:
    """``prefetch`` with the module cache: whole modules are computed ahead, level by level.

    A module whose entry exists is only read (its bytes wait in ``build_cache.MEMO`` for the
    build, and its header names the modules it calls). The others are loaded and merged, in
    worker processes (one per CPU) when there are enough files to pay for them, else in this
    process, which keeps those entries as objects. A worker also emits the output of each
    module that calls no other (``build_cache.emit_ahead``). Returns how many files the computed
    modules hold.
    """
    from flatten.shell import build_cache
    from flatten.stages.files import list_config_files
    from flatten.stages.load import display_path

    cpus = _cpus(workers)
    pool: ProcessPoolExecutor | None = None
    seen = {root.resolve()}
    level = [root]
    done = 0
    try:
        while level:
            jobs: list[tuple[_ModuleJob, int]] = []
            files = 0
            sources: list[tuple[Path, tuple[str, ...]]] = []
            owner: dict[str, Path] = {}
            listed: dict[str, DirectoryListing] = {}
            for directory in level:
                try:
                    listing = list_config_files(directory, dialect=options.dialect)
                    raws = [e.path.read_bytes() for e in listing.files]
                except OSError:
                    continue
                rel = display_path(directory, root)
                key = build_cache.module_key(
                    rel,
                    [
                        (display_path(e.path, root), e.syntax, e.is_override, raw)
                        for e, raw in zip(listing.files, raws, strict=True)
                    ],
                    options,
                )
                data = build_cache.read(key)
                calls = None if data is None else build_cache.entry_calls(data, key)
                if data is not None and calls is not None:
                    build_cache.MEMO[key] = data  # the build decodes it from memory
                    build_cache.READ.add(key)
                    build_cache.note_read(directory, root, options, listing, key)
                    sources.append((directory, calls))
                    continue
                owner[key] = directory
                listed[key] = listing
                jobs.append(((directory, root, options, rel), sum(len(r) for r in raws)))
                files += len(raws)
            if jobs:
                size = sum(n for _, n in jobs)
                results: list[tuple[str, tuple[str, ...]]] = []
                if cpus > 1 and files >= MIN_PARALLEL_FILES and size >= MIN_PARALLEL_BYTES:
                    if pool is None:
                        # One worker per CPU, and this process does not parse: whatever it
                        # computes itself it must also encode, and emit in the layout, after the
                        # parallel part (measured: 0.2 s more for the 200-module tree on 2 CPUs).
                        # Meanwhile it imports the rest of flatten and keeps what workers send.
                        pool = _pool(cpus)
                    batches = _module_batches(jobs, cpus)
                    futures = [pool.submit(_work_modules, b) for b in batches]
                    if meanwhile is not None:
                        meanwhile()
                        meanwhile = None
                    for future in futures:
                        if not future.cancelled():
                            for key, calls, data, output in future.result():
                                build_cache.MEMO[key] = data
                                build_cache.store(key, data)
                                if output is not None:
                                    build_cache.keep_emitted(*output)
                                results.append((key, calls))
                else:
                    # Too little to pay for processes (typically the modules changed since the last build).
                    results.extend(_keep(_compute_modules([job for job, _ in jobs], store_parses=True)))
                for key, calls in results:
                    if key in owner:  # else a file changed while it was read: the build reads it again
                        sources.append((owner[key], calls))
                        build_cache.note_read(owner[key], root, options, listed[key], key)
                done += files
            level = _next_level(sources, seen)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    return done


def _keep(computed: list[tuple[str, object]]) -> list[tuple[str, tuple[str, ...]]]:
    """Keep entries computed in this process for the build (as objects) and queue them for writing."""
    from flatten.shell import build_cache

    out = []
    while computed:
        key, entry = computed.pop()
        assert isinstance(entry, build_cache.ModuleEntry)
        # Encoded once, here, for both the writer and the build (which receives it as bytes from
        # this forked child anyway): two encodings at once, one of them on the writer's thread,
        # each with its pickler's memo, doubled the peak memory of a large module.
        calls, data = build_cache.encode(key, entry)
        del entry
        build_cache.MEMO[key] = data
        build_cache.store(key, data)
        out.append((key, calls))
    out.reverse()
    return out


def _pool(cpus: int) -> ProcessPoolExecutor:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    methods = multiprocessing.get_all_start_methods()
    # fork reuses the modules this process already imported: workers start in milliseconds.
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    return ProcessPoolExecutor(
        max_workers=cpus, mp_context=context, initializer=_worker_init, initargs=(os.getpid(),)
    )


def _worker_init(parent: int) -> None:
    """Make a worker die with the build: killed outright (SIGTERM while prefetching, SIGKILL), the
    build would otherwise leave its workers waiting forever for work, holding its stderr open."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except Exception:
            pass
    if os.getppid() != parent:  # the build ended before this worker could ask
        os._exit(0)


# -- whole-build records -------------------------------------------------------------------------
# A warm rebuild where nothing changed replays the previous build instead of running it. A record
# is written only after a successful plain ``flatten build`` whose modules are all local (no
# registry or remote package, so no network and no ``.terraform`` state decides anything). It holds
# a snapshot of everything the build can read: every module directory's tree (names, symlink
# targets, file contents; hidden and ignored directories are skipped because no stage reads them),
# ``.terraform/modules/modules.json``, and the output tree as written. The record's key covers the
# command line, the environment variables flatten and Terraform read, and the source of flatten and
# its libraries. A record is refused when any input's mtime is not safely older than the build's
# start (it may have changed while the build read it).
# A stage that starts reading files outside module directories (or hidden ones) must add them to
# the snapshot (``_snapshot_inputs``); a command-line option this file does not know disables records.

_RECORD_MAGIC = "flatten-build-3"
_RECORD_HEAD = b"flatten-build-3\n"
# GITHUB_ACTIONS adds workflow annotations to the text diagnostics a replay prints again.
_ENV_PREFIXES = ("TF_", "FLATTEN_", "XDG_", "TOFU_", "NO_COLOR", "TERM", "COLUMNS", "HOME", "GITHUB_ACTIONS")
_MTIME_MARGIN_NS = 2_000_000_000


class _Unrecordable(Exception):
    pass


def _build_version() -> str:
    import importlib.util

    h = hashlib.blake2b(digest_size=16)
    h.update(parser_version().encode())
    h.update(sys.version.encode())
    _file_digest(Path(__file__).parent.parent.rglob("*.py"), h)
    for package in ("networkx", "typer", "click", "packaging"):
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.origin:
            _file_digest([Path(spec.origin)], h)
    return h.hexdigest()


def _plain_build(argv: list[str]) -> tuple[Path, Path, Options, bool] | None:
    """Return (root, out, options, replayable) for a ``build`` command line it can pre-read, else None.

    The options are the build's own (as the command line will make them), so that what prefetch
    computes is stored under the keys the build looks up.
    """
    if not argv or argv[0] != "build":
        return None
    root: str | None = None
    out: str | None = None
    dialect = Dialect.TERRAFORM
    flags = {"provenance": False, "explicit_providers": False}
    replayable = True
    args = argv[1:]
    i = 0
    while i < len(args):
        arg = args[i]
        value: str | None = None
        if arg.startswith("--") and "=" in arg:
            arg, value = arg.split("=", 1)
        if arg in ("--out", "-o", "--dialect", "--format"):
            if value is None:
                i += 1
                if i >= len(args):
                    return None
                value = args[i]
            if arg == "--dialect":
                if value not in ("terraform", "opentofu"):
                    return None
                dialect = Dialect(value)
            elif arg == "--format":
                if value not in ("text", "json", "sarif", "junit"):
                    return None
                # A record replays stderr only; the other formats print on stdout.
                replayable = replayable and value == "text"
            else:
                out = value
        elif arg in ("--provenance", "--no-provenance", "--explicit-providers") and value is None:
            flags[arg.removeprefix("--no-").removeprefix("--").replace("-", "_")] = arg != "--no-provenance"
        elif arg in ("--check", "--diagnostics-json") and value is None:
            replayable = False
        elif not arg.startswith("-") and root is None and value is None:
            root = arg
        else:
            return None
        i += 1
    if out is None:
        return None
    options = Options(dialect, provenance=flags["provenance"], explicit_providers=flags["explicit_providers"])
    try:
        return Path(root or ".").resolve(), Path(out).resolve(), options, replayable
    except (OSError, RuntimeError):
        return None


def _record_key(argv: list[str], root: Path, out: Path) -> str:
    h = hashlib.blake2b(digest_size=20)
    # The cache key is a secret (records are tagged with it instead): never in a file name.
    env = sorted(
        (k, v) for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES) and k != "FLATTEN_CACHE_KEY"
    )
    isatty = sys.stderr.isatty() if hasattr(sys.stderr, "isatty") else False
    h.update(repr((_RECORD_MAGIC, _build_version(), argv, str(root), str(out), env, isatty)).encode())
    return h.hexdigest()


def _digest_file(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.blake2b(f.read(), digest_size=16).hexdigest()


def _snapshot_tree(top: Path, entries: dict[str, object], seen: set[str], started_ns: int | None) -> None:
    """Add ``top``'s tree to ``entries``: directory listings, symlink targets and file digests."""
    real = os.path.realpath(top)
    if real in seen:
        return
    seen.add(real)
    stack = [str(top)]
    while stack:
        current = stack.pop()
        real_dir = os.path.realpath(current)
        st = os.stat(current)
        if started_ns is not None and st.st_mtime_ns >= started_ns - _MTIME_MARGIN_NS:
            raise _Unrecordable(current)
        names = []
        with os.scandir(current) as it:
            for entry in it:
                names.append(entry.name)
                path = entry.path
                if entry.is_symlink():
                    entries["L" + path] = os.readlink(path)
                if entry.is_dir():
                    if entry.name.startswith(".") or entry.name.endswith("~"):
                        continue  # no stage reads hidden or backup directories
                    child_real = os.path.realpath(path)
                    if child_real in seen:
                        if entry.is_symlink():
                            entries["D" + path] = child_real
                        continue
                    seen.add(child_real)
                    stack.append(path)
                elif entry.is_file():
                    if started_ns is not None and entry.stat().st_mtime_ns >= started_ns - _MTIME_MARGIN_NS:
                        raise _Unrecordable(path)
                    entries["F" + path] = _digest_file(path)
        entries["R" + current] = real_dir
        entries["N" + current] = sorted(names)


def _snapshot_inputs(root: Path, tops: list[str], started_ns: int | None) -> dict[str, object]:
    entries: dict[str, object] = {}
    seen: set[str] = set()
    for top in tops:
        _snapshot_tree(Path(top), entries, seen, started_ns)
    manifest = root / ".terraform" / "modules" / "modules.json"
    try:
        entries["M"] = _digest_file(str(manifest))
    except OSError:
        entries["M"] = None
    return entries


def _snapshot_output(out: Path) -> dict[str, str]:
    files: dict[str, str] = {}
    for current, dirs, names in os.walk(out):
        dirs.sort()
        for name in names:
            path = os.path.join(current, name)
            files[os.path.relpath(path, out)] = _digest_file(path)
    return files


def _module_directories(out: Path) -> list[str] | None:
    """Return the module directories (relative to the root) an output manifest lists, if all are local."""
    import json

    from flatten.stages.emit import MANIFEST_NAME

    data = json.loads((out / MANIFEST_NAME).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or set(data) - {"dialect", "flatten_version", "modules"}:
        return None
    found = []
    for module in data.get("modules", []):
        if not isinstance(module, dict) or set(module) - {
            "digest",
            "directory",
            "module",
            "output",
            "source",
        }:
            return None
        source, directory = module.get("source"), module.get("directory")
        if not isinstance(source, str) or not isinstance(directory, str):
            return None
        if source != "." and not source.startswith(("./", "../")):
            return None
        found.append(directory)
    return found or None


class _Tee(io.TextIOBase):
    """A text stream that records what is written and passes it on."""

    def __init__(self, real: object) -> None:
        self.real = real
        self.parts: list[str] = []

    def write(self, s: str | bytes) -> int:
        real = self.real
        if isinstance(s, bytes):
            self.parts.append(s.decode("utf-8", "replace"))
            real.flush()  # type: ignore[attr-defined]
            real.buffer.write(s)  # type: ignore[attr-defined]
            return len(s)
        self.parts.append(s)
        return int(real.write(s))  # type: ignore[attr-defined]

    def flush(self) -> None:
        self.real.flush()  # type: ignore[attr-defined]

    def isatty(self) -> bool:
        return bool(self.real.isatty())  # type: ignore[attr-defined]

    def fileno(self) -> int:
        return int(self.real.fileno())  # type: ignore[attr-defined]

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(self.real.encoding)  # type: ignore[attr-defined]

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return self.real.errors  # type: ignore[attr-defined,no-any-return]


def _stats(inputs: dict[str, object]) -> dict[str, tuple[int, int]]:
    """Return (size, mtime) of each file a snapshot holds: a cheap first check before the digests."""
    found = {}
    for name in inputs:
        if name.startswith("F"):
            st = os.stat(name[1:])
            found[name] = (st.st_size, st.st_mtime_ns)
    return found


def _replay(path: Path, root: Path, out: Path) -> bool:
    try:
        data = path.read_bytes()
        # Only a record this machine's key tagged is unpickled (the file may be anyone's).
        if not data.startswith(_RECORD_HEAD) or not cache_auth.verify(
            "build", path.name, data, len(_RECORD_HEAD)
        ):
            return False
        magic, tops, inputs, stats, outputs, stderr = pickle.loads(
            memoryview(data)[len(_RECORD_HEAD) + cache_auth.TAG_SIZE :]
        )
        if magic != _RECORD_MAGIC or not tops:
            return False
        # A file whose size or mtime differs has changed (or was touched): build, without hashing
        # every input first. Equal stats prove nothing, so the digests decide a replay.
        if _stats(inputs) != stats:
            return False
        if _snapshot_inputs(root, tops, None) != inputs or _snapshot_output(out) != outputs:
            return False
    except Exception:
        return False
    sys.stderr.write(stderr)
    sys.stderr.flush()
    return True


def run_build_command(argv: list[str], run: Callable[[], None]) -> None:
    """Run the command line (``run``), with the parse cache's help for ``build``.

    For a ``build`` command line it understands, it first fills the parse cache in parallel
    (``prefetch``). For a plain build it replays the previous identical build when a record says
    nothing it read changed (the output is already in place), and records a successful one.
    Anything it does not understand runs unchanged.
    """
    plan = _plain_build(argv)
    cache = default_cache()
    if plan is None or cache is None:
        run()
        return
    root, out, options, replayable = plan
    record = cache.directory.parent / "builds" / _record_key(argv, root, out) if replayable else None
    if record is not None and record.is_file() and _replay(record, root, out):
        return
    # Before prefetch, which reads inputs too: a record needs every input older than this.
    started = time.time_ns()
    take = prefetch_forked(root, options=options)
    if take is None:
        prefetch(root, options=options, meanwhile=_import_cli)
    else:
        _import_cli()
        take()
    if record is None:
        try:
            run()
        finally:
            finish()
        return
    err, std = _Tee(sys.stderr), _Tee(sys.stdout)
    sys.stderr, sys.stdout = err, std
    code: object = 0
    try:
        run()
    except SystemExit as exc:
        code = exc.code
        raise
    finally:
        sys.stderr, sys.stdout = err.real, std.real
        finish()
        if code in (0, None) and not "".join(std.parts):
            _save_record(record, root, out, "".join(err.parts), started)


def _import_cli() -> None:
    import flatten.cli  # noqa: F401


def _save_record(record: Path, root: Path, out: Path, stderr: str, started_ns: int) -> None:
    try:
        directories = _module_directories(out)
        if directories is None:
            return
        tops = sorted({os.path.normpath(root / rel) for rel in directories})
        inputs = _snapshot_inputs(root, tops, started_ns)
        payload = pickle.dumps((_RECORD_MAGIC, tops, inputs, _stats(inputs), _snapshot_output(out), stderr))
        data = _RECORD_HEAD + cache_auth.seal("build", record.name, payload)
        record.parent.mkdir(parents=True, exist_ok=True)
        tmp = record.parent / f".{record.name}.{os.getpid()}.tmp"
        tmp.write_bytes(data)
        os.replace(tmp, record)
    except Exception:  # no record: the next build just runs
        return
