"""Prefetch: compute ahead, in worker processes, what a build of a root will read from the caches.

``prefetch`` follows local module calls from the root and parses (or, with the module cache,
loads and merges) what the caches lack, in worker processes when there are enough files to pay
for them (python-hcl2-notes §1.7). Results are keyed by content, so worker order never shows.
``prefetch_forked`` runs it in a forked child while the build process imports the pipeline, and
``finish`` waits for every writer and child it started. ``prefetch_early`` forks that child before
the command line is even parsed, for a plain cold build (flatten.shell.process).
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, NamedTuple

from flatten import gate
from flatten.lang.options import Dialect, Options
from flatten.shell import forks, parse_cache
from flatten.shell.forks import cpus as _cpus
from flatten.shell.forks import worker_init as _worker_init
from flatten.shell.parse_cache import ParseCache, Result, default_cache, encode, module_sources

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

    from flatten.lang.model import Module, Scanned
    from flatten.shell.checks_ahead import Ahead
    from flatten.shell.progress import BuildProgress
    from flatten.stages.files import DirectoryListing

__all__ = [
    "MIN_PARALLEL_BYTES",
    "MIN_PARALLEL_FILES",
    "early_start",
    "finish",
    "prefetch",
    "prefetch_early",
    "prefetch_forked",
]

# Parallel parsing pays off above these (measured with scripts/bench, docs/performance.md).
MIN_PARALLEL_FILES = 8
MIN_PARALLEL_BYTES = 32_000
_BATCH_BYTES = 64_000


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


_WRITERS: list[_Writer] = []
# What prefetch computed for the cache and has not queued for writing yet, by level: entries,
# output bytes and parts of the checks (``_write_computed``). A forked prefetch hands everything
# over to the build first, then writes: sealing 400 of them and starting a writer thread beside
# the hand-over took 20-30 ms of a cold build's one serial stretch (docs/performance.md).
_UNWRITTEN: list[tuple[list[tuple[str, bytes]], list[tuple[str, bytes]], list[tuple[str, bytes]]]] = []
# Prefetching processes (prefetch_forked), waited for by finish(): process id and pipe.
_CHILDREN: list[tuple[int, BinaryIO]] = []


@dataclass(frozen=True, slots=True)
class _Early:
    """A prefetching child forked before the command line was parsed (``prefetch_early``)."""

    root: Path
    options: Options
    started_ns: int  # before the child read anything: a build record's inputs must be older
    pid: int
    take: Callable[[], None]


_EARLY: list[_Early] = []


def finish() -> None:
    """Wait until every cache entry ``prefetch`` (or the module cache) queued is written; then
    drop what prefetch left for the build (``build_cache.forget_prefetched``): a build is over."""
    while _EARLY:  # never handed over (the command line failed, or the build took another path)
        _end_child(_EARLY.pop().pid)
    with contextlib.suppress(Exception):
        _write_computed()
    while _WRITERS:
        _WRITERS.pop().close()
    while _CHILDREN:
        pid, pipe = _CHILDREN.pop()
        # When nothing was taken (the build stopped first), a child still writing to the pipe
        # would wait for a reader forever: closed, its write fails and it exits.
        pipe.close()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    from flatten.shell import build_cache, parse_cache

    build_cache.finish()
    build_cache.forget_prefetched()
    parse_cache.forget_prefetched()


def abandon() -> None:
    """Kill every prefetching child now (the build was interrupted: nobody takes their work).

    Each child's own helpers die with it (PR_SET_PDEATHSIG). Then ``finish`` has nothing left to
    wait for but this process's cache writers, which write what was already computed. Entries
    are written as a temporary file renamed into place: none is left half written.
    """
    while _EARLY:
        _EARLY.pop()
    for pid, _ in _CHILDREN:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _kill_pool(pool: ProcessPoolExecutor) -> None:
    """Kill ``pool``'s workers after an interrupt (shutdown would wait for their running work)."""
    processes = getattr(pool, "_processes", None) or {}
    for process in list(processes.values()):
        with contextlib.suppress(Exception):
            process.kill()
    pool.shutdown(wait=False, cancel_futures=True)


_Job = tuple[str, str, str, str, Dialect]  # key, text, name, syntax, dialect


def _work(jobs: list[_Job]) -> list[tuple[str, tuple[str, ...], bytes]]:
    """Worker: parse each job; return each key's module sources and entry bytes."""
    out = []
    for key, text, name, syntax, dialect in jobs:
        calls, data = encode(key, parse_cache.parse_file(text, name, syntax, dialect))
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
    root: Path,
    *,
    options: Options,
    workers: int | None = None,
    meanwhile: Callable[[], object] | None = None,
    progress: BuildProgress | None = None,
    hand_over: bool = False,
) -> int:
    """Parse into the cache, in parallel, the files a build of ``root`` will read; return how many.

    Follows local module calls (``./``, ``../``) from ``root``, level by level. Only files the
    cache lacks are parsed; below ``MIN_PARALLEL_FILES``/``MIN_PARALLEL_BYTES`` uncached files
    they are left to the build. ``meanwhile`` runs once while the workers parse (the command line
    imports the rest of flatten there). With ``hand_over``, the module cache's entries are queued
    for writing by ``finish``, after the caller hands them to the build. Never raises: any
    trouble just leaves the work to the build.
    """
    cache = default_cache()
    if cache is None:
        return 0
    from flatten.shell import build_cache

    try:
        if build_cache.enabled():
            return _prefetch_modules(root.absolute(), options, workers, meanwhile, progress)
        return _prefetch(root.absolute(), cache, options, workers, meanwhile)
    except Exception:
        return 0
    finally:
        if not hand_over:
            with contextlib.suppress(Exception):
                _write_computed()


def prefetch_early(root: Path, *, options: Options, progress: BuildProgress | None = None) -> None:
    """Start ``prefetch_forked`` now, before the command line is parsed; the build's own call with
    the same root and options takes this child over (else the child is ended, unused).

    For a cold build typer and flatten.cli take 0.06 to 0.1 s to import and parse the command
    line; the child parses meanwhile instead of after (docs/performance.md).
    """
    started = time.time_ns()
    take = prefetch_forked(root, options=options, progress=progress)
    if take is not None:
        _EARLY.append(_Early(root, options, started, _CHILDREN[-1][0], take))


def early_start(root: Path, options: Options) -> int | None:
    """Return when the early prefetch for ``root`` and ``options`` started (time.time_ns), if one runs."""
    for early in _EARLY:
        if early.root == root and early.options == options:
            return early.started_ns
    return None


def _end_child(pid: int) -> None:
    """End a prefetching child whose work nobody will take, and forget it."""
    for i, (child, pipe) in enumerate(_CHILDREN):
        if child == pid:
            del _CHILDREN[i]
            pipe.close()
            break
    # Killed: it would otherwise compute the whole tree before finding the pipe closed. Its
    # helpers die with it (PR_SET_PDEATHSIG). Cache entries are written as a temporary file
    # renamed into place, so none is left half written (at worst a temporary file, never read).
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def prefetch_forked(
    root: Path, *, options: Options, progress: BuildProgress | None = None
) -> Callable[[], None] | None:
    """Run ``prefetch`` in a forked process; return a function that waits for it and takes in
    what it prefetched, or None where it cannot (no fork, or the module cache is off).

    A child ``prefetch_early`` started for the same root and options is taken over instead; one
    for another is ended first.

    Meanwhile this process imports the rest of flatten (0.2 s of a rebuild after one edit, which
    prefetches in-process: reading every file and cache entry, parsing the edited file). The
    child may start its own workers. It must be started before anything else runs threads (it is
    forked). It writes the cache entries it computed after handing them over: ``finish`` waits
    for it. Any trouble in the child just leaves the work to the build.
    """
    from flatten.shell import build_cache

    while _EARLY:
        early = _EARLY.pop()
        if early.root == root and early.options == options:
            return early.take
        _end_child(early.pid)
    if not hasattr(os, "fork") or not build_cache.enabled() or default_cache() is None:
        return None
    if threading.active_count() > 1:  # a lock another thread holds would stay held in the child
        return None
    # What the child runs (loading, parsing, merging, emitting), imported before it is forked:
    # the build imports the same modules anyway, and each process importing them on its own
    # cost about 25 ms of CPU twice, the child's competing with this process's imports.
    import flatten.shell.memo
    import flatten.stages.emit
    import flatten.stages.load  # noqa: F401

    # The cache is a hierarchy of its own: marked before the directories of its entries are made
    # (a cold build's), they land in block groups of their own (stages.output.mark_top_directory).
    from flatten.shell.cache_dir import cache_root
    from flatten.stages.output import mark_top_directory

    with contextlib.suppress(OSError):
        top = cache_root()
        gate.make_dirs(top, mode=0o700)
        mark_top_directory(top)

    def send(sending: BinaryIO) -> None:
        try:
            prefetch(root, options=options, progress=progress, hand_over=True)
            build_cache.export_prefetched(sending)
        finally:
            finish()  # the cache's entries, written once the build has them

    pid, received = forks.helper(os.getpid(), send)
    _CHILDREN.append((pid, received))

    def take() -> None:
        # A pickle, but from our own fork through a pipe only the two processes hold: trusted
        # (what the child read from the cache it verified first; the rest it computed). An empty
        # pipe means the child failed: the build computes what it needs.
        with received, contextlib.suppress(Exception):
            build_cache.import_prefetched(received)

    return take


def _prefetch(
    root: Path,
    cache: ParseCache,
    options: Options,
    workers: int | None,
    meanwhile: Callable[[], object] | None,
) -> int:
    from flatten.stages.files import list_config_files
    from flatten.stages.load import display_path, read_config

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
                        text = read_config(entry.path, root).decode("utf-8")
                    except (OSError, UnicodeDecodeError):
                        continue
                    name = display_path(entry.path, root)
                    key = cache.key(text, name, entry.syntax, options.dialect)
                    found = cache.read(key)
                    if found is None:
                        jobs.append((key, text, name, entry.syntax, options.dialect))
                        owner[key] = directory
                    else:
                        # Verified by read: the build decodes it from memory.
                        parse_cache.remember(key, found[1])
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
                            result = parse_cache.parse_file(text, name, syntax, dialect)
                            parse_cache.remember(key, result)
                            writer.put(key, result)
                            results.append((key, module_sources(result[0])))
                    for future in futures:
                        if not future.cancelled():
                            # From our own worker processes (through the pool's pipes): trusted.
                            for key, calls, data in future.result():
                                parse_cache.remember(key, data)
                                writer.put(key, data)
                                results.append((key, calls))
                    sources.extend((owner[key], calls) for key, calls in results)
                    done += len(jobs)
                else:
                    # Too little to pay for processes: read them here, for their module calls.
                    for key, text, name, syntax, dialect in jobs:
                        result = parse_cache.parse_file(text, name, syntax, dialect)
                        parse_cache.remember(key, result)
                        writer.put(key, result)
                        sources.append((owner[key], module_sources(result[0])))
            level = _next_level(sources, seen)
    except BaseException:
        if pool is not None:  # Ctrl-C, SIGTERM: the workers stop now
            _kill_pool(pool)
            pool = None
        raise
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    return done


def _ticker(progress: BuildProgress, read: int, known: int) -> Callable[[int], None]:
    """Report ``read`` modules, plus those a level's computation has done so far, of ``known``."""

    def tick(n: int) -> None:
        progress.reading(read + n, known)

    return tick


def _next_level(sources: list[tuple[Path, tuple[str, ...]]], seen: set[Path]) -> list[Path]:
    """Return the directories not yet ``seen`` that local module calls in ``sources`` load, sorted.

    ``sources`` pairs each module directory with the sources of its module calls.
    """
    level = []
    parents: dict[str, str] = {}  # each parent directory's real path, resolved once
    for directory, calls in sources:
        for source in calls:
            if not source.startswith(("./", "../")):
                continue
            path = os.path.normpath(directory / source)
            real = _real_directory(path, parents)
            if real is not None and real not in seen:
                seen.add(real)
                level.append(Path(path))
    return sorted(level)


def _real_directory(path: str, parents: dict[str, str]) -> Path | None:
    """The real path of the directory ``path`` (links resolved, as ``Path.resolve``), or None
    when it is no directory. A directory that is no link is its parent's real path and its
    name: one ``lstat`` for each of a level's 200 calls in one directory, where resolving each
    path whole took one for every component (7 ms before the first fork of a cold build)."""
    head, name = os.path.split(path)
    kind = gate.kind_of(path)
    if name and kind == "dir":
        parent = parents.get(head)
        if parent is None:
            parent = parents[head] = os.path.realpath(head)
        return Path(parent, name)
    if kind not in ("dir", "link"):  # a directory here is one without a name ("/")
        return None
    try:
        real = Path(path).resolve()
    except OSError:
        return None
    return real if real.is_dir() else None


# A module directory to compute: its directory, the root, the options, its display path, and its
# listing when its files are still to be read and keyed there (else prefetch keyed them, found no
# entry, and noted the key: build_cache.note_read).
_ModuleJob = tuple[Path, Path, Options, str, "DirectoryListing | None"]

# A module's files are kept from its key to its computation (build_cache.note_read) up to this
# size; a larger one's are read again there, not held meanwhile (docs/reliability.md, "Memory").
_KEEP_READ = 256 * 1024


@dataclass(frozen=True, slots=True)
class _Read:
    """A module directory's files as read for its key (``_read_module``)."""

    key: str
    raws: list[bytes]
    data: bytes | None  # its entry, when the cache has it
    calls: tuple[str, ...] | None  # the sources of its module calls, from the entry's header


def _read_module(
    directory: Path, root: Path, options: Options, rel: str, listing: DirectoryListing
) -> _Read | None:
    """Read ``directory``'s files (``listing``), key them as the disk memo does, and look the key
    up in the module cache; None when a file cannot be read (the build reports it)."""
    from flatten.shell import build_cache
    from flatten.shell.memo import source_key
    from flatten.stages.memo import ModuleSource

    try:
        key, raws = source_key(ModuleSource(directory, root, rel, listing, options))
    except OSError:
        return None
    data = build_cache.read(key)
    return _Read(key, raws, data, None if data is None else build_cache.entry_calls(data, key))


def _compute_modules(
    jobs: list[_ModuleJob],
    *,
    store_parses: bool = False,
    known_scans: dict[str, Scanned] | None = None,
    found: list[tuple[str, str, tuple[str, ...]]] | None = None,
) -> list[tuple[str, object]]:
    """Load and merge each module directory (through load_module and the disk memo, which fill
    the module cache); return the entries computed, by key, instead of storing them. Per-file parse
    entries are written only with ``store_parses`` (the module entry holds every file's parse).
    ``known_scans``: the scans of the modules this process loaded before (``load_module``).

    A job whose files are still to be read (its listing given) is read and keyed here; one the
    cache has an entry for is not computed but added to ``found`` (display path, key, calls).
    """
    from flatten.shell import build_cache
    from flatten.shell.build_cache import ModuleEntry
    from flatten.shell.memo import DiskMemo
    from flatten.stages.load import load_module

    captured: list[tuple[str, ModuleEntry]] = []
    memo = DiskMemo(captured=captured)
    if known_scans is None:
        known_scans = {}  # the jobs' modules share their scans (load_module)
    was_enabled = gc.isenabled()
    gc.disable()  # loading allocates many small objects and frees none of them
    try:
        with parse_cache.file_entries(store_parses):
            for directory, root, options, rel, listing in jobs:
                if listing is not None:
                    read = _read_module(directory, root, options, rel, listing)
                    if read is None:
                        continue  # a file cannot be read: the build reports it
                    if read.data is not None and read.calls is not None:
                        if found is not None:
                            found.append((rel, read.key, read.calls))
                        continue
                    # Read once: the computation below takes these bytes (DiskMemo.module).
                    build_cache.note_read(directory, root, options, listing, read.key, read.raws)
                    del read
                load_module(directory, root=root, options=options, memo=memo, known_scans=known_scans)
        return list(captured)
    finally:
        if was_enabled:
            gc.enable()


class _Computed(NamedTuple):
    """A module a worker computed, or found in the cache, for its parent."""

    rel: str  # its display path: which job
    key: str
    calls: tuple[str, ...]  # the sources of its module calls
    data: bytes  # its entry's bytes; empty when found in the cache (the build reads it there) or
    # kept by the process that computed it (``_keep``)
    output: tuple[str, bytes] | None  # its output bytes by emit key, when it calls no module
    named: tuple[tuple[str, str], ...]  # its calls by name (``checks_ahead.named_calls``)
    parts: tuple[tuple[str, bytes], ...]  # its parts of the checks computed ahead (digest, pickle)
    cached: bool = False  # found in the cache, not computed


def _work_modules(
    jobs: list[_ModuleJob], known_scans: dict[str, Scanned] | None = None, ahead: Ahead | None = None
) -> list[_Computed]:
    """Worker: compute each module (``_Computed``). ``known_scans``: the scans of the modules
    this process computed before (``load_module``); ``ahead``: what prefetch knows of the tree,
    for the parts of the checks computed ahead (flatten/shell/checks_ahead.py; none without)."""
    from flatten.shell import build_cache
    from flatten.shell.checks_ahead import named_calls
    from flatten.stages.emit import dumps, module_json

    provenance = bool(jobs) and jobs[0][2].provenance  # one build's jobs: the same options
    directories = {rel: (directory, options) for directory, _, options, rel, _ in jobs}

    def render(module: Module) -> bytes:
        return dumps(module_json(module, provenance=provenance)).encode("utf-8")

    found: list[tuple[str, str, tuple[str, ...]]] = []
    out: list[_Computed] = []
    for key, entry in _compute_modules(jobs, known_scans=known_scans, found=found):
        assert isinstance(entry, build_cache.ModuleEntry)
        calls, data = build_cache.encode(key, entry)
        output = build_cache.emit_ahead(key, entry.module, provenance, render)
        named = named_calls(entry.module)
        parts: tuple[tuple[str, bytes], ...] = ()
        if ahead is not None and entry.directory in directories:
            directory, options = directories[entry.directory]
            parts = ahead.parts(key, entry, directory, options, named)
        out.append(_Computed(entry.directory, key, calls, data, output, named, parts))
    out.extend(_Computed(rel, key, calls, b"", None, (), (), cached=True) for rel, key, calls in found)
    return out


def _compute_shared(
    jobs: list[tuple[_ModuleJob, int]],
    cpus: int,
    tick: Callable[[int], None] | None = None,
    ahead: Ahead | None = None,
) -> list[_Computed]:
    """Compute ``jobs`` (each with its size) here and in one forked helper per other CPU
    (``forks.forked``: a queue of units of jobs, largest job first, that every process takes from
    as it is free); return every result (a job whose helper failed is missing: the build computes
    that module).

    Plain forks instead of a process pool: no pool to import and start (about 0.07 s of a cold
    build) and no batches pickled back and forth, and this process, which would otherwise only
    wait, computes too. Called with no other thread running (see ``_prefetch_modules``).
    """
    order = [job for job, _ in sorted(jobs, key=lambda j: -j[1])]
    units = forks.split(order)
    processes = min(cpus, len(jobs))
    # Each process's count of jobs done, in a slot of its own of shared memory (no lock: one
    # writer per slot), summed for ``tick`` (the progress line) by this process between its units.
    counts = _Counts(processes) if tick is not None else None
    # The scans of the modules one process computed, for the next ones it takes: each forked
    # helper has its own copy of this (empty) dictionary.
    known_scans: dict[str, Scanned] = {}

    def take(unit: int, slot: int) -> list[_Computed]:
        done = _work_modules(list(units[unit]), known_scans, ahead)
        if counts is not None:
            counts.add(slot, len(units[unit]))
            if tick is not None and slot == 0:
                tick(counts.total())
        return done

    return [computed for part in forks.forked(len(units), processes, take) for computed in part]


class _Counts:
    """Jobs done by each process of ``_compute_shared``: one 8-byte slot each, shared by fork."""

    def __init__(self, slots: int) -> None:
        import mmap

        self.slots = slots
        self.memory = mmap.mmap(-1, 8 * slots)

    def add(self, slot: int, n: int) -> None:
        at = 8 * slot
        done = int.from_bytes(self.memory[at : at + 8], "little") + n
        self.memory[at : at + 8] = done.to_bytes(8, "little")

    def total(self) -> int:
        return sum(int.from_bytes(self.memory[8 * i : 8 * i + 8], "little") for i in range(self.slots))


def _prefetch_modules(
    root: Path,
    options: Options,
    workers: int | None,
    meanwhile: Callable[[], object] | None,
    progress: BuildProgress | None = None,
) -> int:
    """``prefetch`` with the module cache: whole modules are computed ahead, level by level.

    A module whose entry exists is only read (its bytes wait in ``build_cache.MEMO`` for the
    build, and its header names the modules it calls). The others are loaded and merged, when
    there are enough files to pay for more processes, here and in one forked helper per other
    CPU (``_compute_shared``; or, while ``meanwhile`` runs here, in a pool of worker processes),
    else here alone. Whatever computes a level in parallel also emits the output of each module
    that calls no other (``build_cache.emit_ahead``). Returns how many files the computed
    modules hold.
    """
    from flatten.shell import build_cache
    from flatten.shell.checks_ahead import Ahead, named_calls
    from flatten.stages.files import list_config_files
    from flatten.stages.load import display_path

    cpus = _cpus(workers)
    pool: ProcessPoolExecutor | None = None
    ahead = Ahead(root, options)
    seen = {root.resolve()}
    level = [root]
    done = 0
    read = 0  # module directories read or computed, for ``progress``
    # Entries and output bytes to write, queued once every level is computed: a writer thread
    # started earlier would be running when the next level forks its helpers.
    pending: list[tuple[str, bytes]] = []
    emitted: list[tuple[str, bytes]] = []
    checked: list[tuple[str, bytes]] = []
    try:
        while level:
            jobs: list[tuple[_ModuleJob, int]] = []
            files = size = 0
            parallel = False
            sources: list[tuple[Path, tuple[str, ...]]] = []
            listed: dict[str, tuple[Path, DirectoryListing]] = {}  # by display path
            for directory in level:
                try:
                    listing = list_config_files(directory, dialect=options.dialect)
                except OSError:
                    continue
                rel = display_path(directory, root)
                listed[rel] = (directory, listing)
                if parallel:
                    # Enough to compute to pay for helpers: the rest are read, keyed and looked
                    # up by whichever process computes them, not here first, one after another.
                    jobs.append(((directory, root, options, rel, listing), 0))
                    continue
                found = _read_module(directory, root, options, rel, listing)
                if found is None:
                    continue
                if found.data is not None and found.calls is not None:
                    build_cache.MEMO[found.key] = found.data  # the build decodes it from memory
                    build_cache.READ.add(found.key)
                    build_cache.note_read(directory, root, options, listing, found.key)
                    sources.append((directory, found.calls))
                    continue
                n = sum(len(r) for r in found.raws)
                # Kept for the computation, unless large (docs/reliability.md, "Memory").
                kept = found.raws if n <= _KEEP_READ else None
                build_cache.note_read(directory, root, options, listing, found.key, kept)
                del found, kept
                jobs.append(((directory, root, options, rel, None), n))
                files += len(listing.files)
                size += n
                parallel = cpus > 1 and files >= MIN_PARALLEL_FILES and size >= MIN_PARALLEL_BYTES
            read += len(level) - len(jobs)  # found in the cache, or unreadable
            tick = None
            if progress is not None:
                progress.reading(read, len(seen))
                tick = _ticker(progress, read, len(seen))
            if jobs:
                results: list[_Computed] = []
                if parallel and meanwhile is None and threading.active_count() == 1:
                    # Forked helpers, one per CPU but this process, which computes a share too
                    # (encoded and emitted ahead the same way). Nothing written meanwhile: the
                    # writer threads start after the last fork (``pending``).
                    if ahead.on:
                        # Imported once, before the helpers are forked: each would import it
                        # on its own. Only then: a tree too small for helpers computes no part.
                        import flatten.stages.check_parts  # noqa: F401
                    results = _compute_shared(jobs, cpus, tick, ahead)
                elif parallel:
                    # This process imports the rest of flatten meanwhile (``meanwhile``): workers
                    # do all the computing, and this process keeps what they send.
                    if pool is None:
                        pool = _pool(cpus)
                    batches = _module_batches(jobs, cpus)
                    futures = [pool.submit(_work_modules, b) for b in batches]
                    if meanwhile is not None:
                        meanwhile()
                        meanwhile = None
                    for n, future in enumerate(futures):
                        if tick is not None:  # the batches before this one are done
                            tick(sum(len(b) for b in batches[:n]))
                        if not future.cancelled():
                            results.extend(future.result())
                else:
                    # Too little to pay for processes (typically the modules changed since the last build).
                    computed = _compute_modules([job for job, _ in jobs], store_parses=True)
                    for key, entry in computed:
                        assert isinstance(entry, build_cache.ModuleEntry)
                        if entry.directory in listed:
                            ahead.loaded(key, listed[entry.directory][0], named_calls(entry.module))
                        ahead.keep_caller(key, entry)
                    for key, rel, calls in _keep(computed, pending):
                        results.append(_Computed(rel, key, calls, b"", None, (), ()))
                for result in results:
                    if result.rel not in listed:
                        continue
                    directory, listing = listed[result.rel]
                    if result.data:  # computed by a helper (else found in the cache, or kept)
                        build_cache.MEMO[result.key] = result.data
                        pending.append((result.key, result.data))
                        if result.output is not None:
                            emitted.append(result.output)
                        checked.extend(result.parts)
                        ahead.loaded(result.key, directory, result.named)
                    sources.append((directory, result.calls))
                    build_cache.note_read(directory, root, options, listing, result.key)
                    if not result.cached:
                        done += len(listing.files)
                read += len(jobs)
            level = _next_level(sources, seen)
    except BaseException:
        if pool is not None:  # Ctrl-C, SIGTERM: the workers stop now
            _kill_pool(pool)
            pool = None
        raise
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        for digest, rendered in emitted:
            build_cache.keep_emitted(digest, rendered)
        for digest, part in checked:
            build_cache.keep_checked(digest, part)
        _UNWRITTEN.append((pending, emitted, checked))
    return done


def _write_computed() -> None:
    """Queue what prefetch computed for the cache (``_UNWRITTEN``) on its background writers."""
    from flatten.shell import build_cache

    while _UNWRITTEN:
        pending, emitted, checked = _UNWRITTEN.pop()
        for key, data in pending:
            build_cache.store(key, data)
        for digest, rendered in emitted:
            build_cache.write_emitted(digest, rendered)
        for digest, part in checked:
            build_cache.write_checked(digest, part)


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


def _keep(
    computed: list[tuple[str, object]], pending: list[tuple[str, bytes]]
) -> list[tuple[str, str, tuple[str, ...]]]:
    """Keep entries computed in this process for the build (as objects) and queue them for
    writing; return each one's key, display path and calls."""
    from flatten.shell import build_cache

    out = []
    while computed:
        key, entry = computed.pop()
        assert isinstance(entry, build_cache.ModuleEntry)
        rel = entry.directory
        # Encoded once, straight into the cache file, which the build reads (not kept in MEMO):
        # the entry's bytes held beside the model were a third of a large module's peak
        # (docs/reliability.md, "Memory"). Where it cannot be written, as bytes for both.
        found = build_cache.write_entry(key, entry)
        if found is None:
            found, data = build_cache.encode(key, entry)
            build_cache.MEMO[key] = data
            pending.append((key, data))  # written after the last fork (no writer thread before it)
        del entry
        out.append((key, rel, found))
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
