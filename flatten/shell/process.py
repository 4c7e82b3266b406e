"""The flatten program's process: the build runner, garbage collection, recorded stdio, the exit.

``main`` runs the command line with ``run_build`` as the runner of build requests (typer parses
the command line once, in flatten.cli). For a build it can help, ``run_build`` replays the
previous identical build when a record says nothing it read changed (flatten.shell.replay), else
writes the output of the previous identical build into a new --out (the same record), else
prefetches in a fork while this process imports the pipeline (flatten.shell.prefetch), runs the
build, and records it. A plain cold build (``build ROOT --out OUT`` and a cache holding no build
yet) forks that prefetch before typer even parses the command line. A library caller of
flatten.cli (typer's CliRunner) gets none of this.
"""

from __future__ import annotations

import gc
import io
import os
import sys
import time
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from flatten.cli import BuildRequest
    from flatten.shell.progress import BuildProgress

__all__ = ["end", "main", "run_build"]


def defer_methods() -> None:
    """Have the dataclasses made from now on compile their methods when first called
    (flatten/shell/dataclass_methods.py): the program's start-up, not the library's."""
    from flatten.shell.dataclass_methods import defer_methods as defer

    defer()


def main() -> None:
    """Run the command line in ``sys.argv`` as the one-shot ``flatten`` process."""
    # A one-shot process whose objects nearly all live to the end: cyclic collection only
    # costs time (about a quarter of a warm build; docs/performance.md).
    gc.disable()
    argv = sys.argv[1:]
    progress = None
    if argv[:1] == ["build"] and not {"--help", "-h"} & set(argv):  # help imports nothing of the caches
        from flatten.shell import replay
        from flatten.shell.progress import BuildProgress

        # The same command line as a recorded build, nothing changed: replayed before typer and
        # the command line are even imported (most of a replay's time otherwise). Its alias is
        # read once: an edited build's early rebuild starts from it too.
        found = replay.aliased(argv)
        if replay.replay_alias(found):
            sys.exit(0)
        # Not replayed: before the modules that make dataclasses are imported (a replay imports
        # none, nor ``dataclasses`` itself: 11 ms).
        defer_methods()
        from flatten.shell.forks import give_freed_back

        # As in every forked helper: a large buffer freed (the prefetched module's entry, a file
        # read for its key) otherwise raises glibc's mmap threshold to its size, and the build's
        # later large temporaries (the checks' walk, the output's bytes) stay resident once freed:
        # 10 MiB of a cold build's peak for 10 MB of HCL in one file (issue 38, item 13). After
        # the replay, which reads a record and digests the output in chunks of at most 1 MiB:
        # importing forks (ctypes, threading) was 3 ms of its 50.
        give_freed_back()
        # The progress line's clock starts here; the prefetching child inherits it.
        progress = BuildProgress.on_terminal()
        _prefetch_early(argv, progress)
        _rebuild_early(argv, found)
    defer_methods()  # for every other command line too (at most once)
    from flatten.cli import main as cli_main

    cli_main(runner=partial(run_build, argv=argv, progress=progress))


def plain_build(argv: Sequence[str]) -> tuple[str, str] | None:
    """Return ROOT and OUT of ``build [ROOT] --out OUT`` (in either order, ``-o`` or ``--out=``),
    else None: the one command line whose options are known before typer parses it (all at their
    defaults). Anything else (another option, two roots) is None; so is anything typer would
    refuse, or read otherwise, as far as it matters: the build takes the early prefetch over only
    when typer's root and options turn out the same.

    >>> plain_build(["build", "live", "--out", "dist"]), plain_build(["build", "-o", "dist"])
    (('live', 'dist'), ('.', 'dist'))
    >>> plain_build(["build", "live", "--out=dist", "--provenance"]) is None
    True
    """
    root: str | None = None
    out: str | None = None
    rest = list(argv[1:])
    while rest:
        arg = rest.pop(0)
        if arg in ("--out", "-o") and rest and out is None:
            out = rest.pop(0)
        elif arg.startswith("--out=") and out is None:
            out = arg.removeprefix("--out=")
        elif arg.startswith("-") or not arg or root is not None:
            return None
        else:
            root = arg
    return None if not out else (root or ".", out)


def _prefetch_early(argv: Sequence[str], progress: BuildProgress | None = None) -> None:
    """Fork the prefetch now, while typer and flatten.cli are imported, for a plain cold build.

    Cold: the cache holds no build record, so nothing can be replayed or rebuilt in part, and the
    build is bound to prefetch (``run_build``). Otherwise the usual order stands: a warm build
    must not pay for a child it would not use. Never raises; the build then runs as usual.
    """
    plain = plain_build(argv)
    if plain is None or any(name.startswith("_FLATTEN_COMPLETE") for name in os.environ):
        return
    try:
        from flatten.shell.cache_dir import area, cache_root

        # Checked first: a warm build imports nothing more here (a replay into a new --out never
        # loads the model: tests/project/test_api.py).
        builds = area(cache_root() / "builds", create=False)
        if builds is not None and builds.list():
            return
        from pathlib import Path

        from flatten.lang.options import Options
        from flatten.shell import build_cache
        from flatten.shell.parse_cache import default_cache

        if default_cache() is None or not build_cache.enabled():
            return
        from flatten.shell.prefetch import prefetch_early

        # A plain command line has no --quiet: the child may draw the progress line.
        extra = {"progress": progress} if progress is not None else {}
        prefetch_early(Path(plain[0]).resolve(), options=Options(), **extra)
    except Exception:  # the build prefetches as usual
        return


def _rebuild_early(argv: Sequence[str], found: tuple[Path, Path, Path] | None) -> None:
    """Fork the parse of the modules edited since the previous build of a plain command line
    (``plain_build``; ``found``: its alias, ``replay.aliased``) now, before typer and flatten.cli
    are imported (``incremental.rebuild_early``: that child is a rebuild's peak, and they are 13
    MiB of it). Never raises."""
    if found is None or plain_build(argv) is None:
        return
    try:
        from flatten.lang.options import Options
        from flatten.shell.incremental import rebuild_early

        rebuild_early(*found, Options())
    except Exception:  # the rebuild parses as usual
        return


def run_build(
    request: BuildRequest, argv: Sequence[str] | None = None, progress: BuildProgress | None = None
) -> int:
    """Run ``request`` with the caches' help (replay, prefetch, record); return its exit code.

    ``argv`` is the command line typer parsed into ``request``, when it was this process's own:
    a build recorded or replayed then lets the same command line replay next time before it is
    parsed (``replay.save_alias``). Anything it cannot help (a cache turned off, a root or output
    that does not resolve, an option prefetch does not know) runs unchanged.
    """
    # Imported by the command that builds: ``--version``, ``--help`` and shell completion load
    # neither the caches nor the pipeline (tests/cli/test_startup.py).
    from flatten.cli import run_request as run_plain
    from flatten.shell import replay
    from flatten.shell.parse_cache import default_cache

    if request.quiet:
        progress = None
    # Called plainly without one (tests replace run_request with a counting function).
    run_request = partial(run_plain, progress=progress) if progress is not None else run_plain

    if len(request.roots) > 1:
        # Its own prefetch (every module loaded once, then one forked build per CPU) and no
        # build record: flatten/shell/roots.py.
        from flatten.shell.roots import run_roots

        return run_roots(request)
    cache = default_cache()
    options = request.options
    if (
        cache is None
        or options.offline
        or options.locked
        or options.inline
        or options.inline_only is not None
    ):
        return run_request(request)
    try:
        root, out = request.root.resolve(), request.out.resolve()
    except (OSError, RuntimeError):  # the build reports it
        return run_request(request)
    record = None
    builds = cache.directory.parent / "builds"
    if replay.replayable(request):
        record = replay.record_path(builds, request, root, out)
        if record.is_file() and replay.replay(record, root, out):
            if argv is not None:
                replay.save_alias(argv, record, request, root, out)
            return 0
        if replay.replay_into(builds, request, root, out):  # the same build, into a new --out
            return 0
        if record.is_file():  # only some modules' files changed: rebuild those
            from flatten.shell.incremental import rebuild

            if rebuild(builds, request, root, out, record, argv):
                return 0
    # Before prefetch, which reads inputs too: a record needs every input older than this.
    started = time.time_ns()
    from flatten.shell.prefetch import early_start, finish, prefetch, prefetch_forked

    started = min(started, early_start(root, options) or started)
    take = prefetch_forked(root, options=options, progress=progress)
    if take is None:
        prefetch(root, options=options, meanwhile=_load_all, progress=progress)
    else:
        _load_all()
        take()
    if record is None:
        try:
            return run_request(request)
        except BaseException as exc:
            _abandon_if_interrupted(exc)
            raise
        finally:
            finish()
    from flatten.shell.memo import forget_keys

    forget_keys()  # the record keeps the keys of this build's modules only
    err, std = _Tee(sys.stderr), _Tee(sys.stdout)
    sys.stderr, sys.stdout = err, std
    try:
        try:
            code = run_request(request)
        finally:
            sys.stderr, sys.stdout = err.real, std.real
        # Recorded while the prefetching child still writes its cache entries (``finish``): the
        # record reads only the inputs and the output, and a rebuild that misses a module's entry
        # computes it.
        recordable = code == 0 and not "".join(std.parts)
        recorded = recordable and replay.save_record(builds, request, root, out, "".join(err.parts), started)
        if recorded:
            from flatten.shell import incremental
            from flatten.shell.memo import module_keys

            incremental.save_keys(record, module_keys())  # bound to the record just saved
            if argv is not None:
                replay.save_alias(argv, record, request, root, out)
    except BaseException as exc:
        _abandon_if_interrupted(exc)
        raise
    finally:
        finish()
    return code


def _abandon_if_interrupted(exc: BaseException) -> None:
    """After Ctrl-C or SIGTERM (anything but an ``Exception``), kill the prefetching children
    before ``finish`` would wait for them to end their work (flatten/__main__.py)."""
    if not isinstance(exc, Exception):
        from flatten.shell.prefetch import abandon

        abandon()


def _load_all() -> None:
    """Import the pipeline while prefetch works: the imports are most of a small build's time."""
    from flatten.cli import load_pipeline

    load_pipeline()


def end(status: int) -> None:
    """End the process with ``status`` without tearing the heap down.

    Freeing what a build made (a full collection, then every object one by one) took 0.15 to
    0.25 s after a 200-module build, a third of a rebuild after one edit; mypy exits the same way.
    First every cache write finishes and both streams are flushed; a stream that cannot be
    flushed (a closed pipe) makes the status 120, as Python's own exit does.
    """
    # What was never imported started no writer and no child: the replay path imports neither.
    prefetch = sys.modules.get("flatten.shell.prefetch")
    build_cache = sys.modules.get("flatten.shell.build_cache")
    incremental = sys.modules.get("flatten.shell.incremental")
    if incremental is not None:
        incremental.end_early()  # a rebuild's parse nobody took (another path ran)
    if prefetch is not None:
        prefetch.finish()  # and the module cache's writers
    elif build_cache is not None:
        build_cache.finish()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            status = status or 120
    os._exit(status)


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
