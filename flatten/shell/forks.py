"""Work shared with forked helper processes: the rules every fork of flatten's follows.

Plain forks, no process pool (nothing to import or start): a helper inherits what this process
holds, and takes work from a pipe of numbers as it is free, so that on a machine other tenants
share a helper that gets less CPU takes less work (prefetch's modules, flatten/shell/prefetch.py;
the checks' parts, flatten/shell/build_cache.py ``checked``). A helper dies with the process that
forked it (``worker_init``). Only a process with no other thread forks: a lock another thread
holds would stay held in the helper.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import BinaryIO, TypeVar

__all__ = [
    "RECORD",
    "UNITS",
    "cpus",
    "detached",
    "forked",
    "give_freed_back",
    "helper",
    "later",
    "reap",
    "shared",
    "split",
    "worker_init",
]

T = TypeVar("T")

RECORD = 4  # bytes of one unit number in a queue of work
UNITS = 4096  # at most this many numbers in one queue (16 KB: a pipe holds 64 KB)


def cpus(workers: int | None) -> int:
    """``workers`` when given, else how many CPUs this process may run on."""
    if workers:
        return workers
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def split(items: Sequence[T]) -> list[Sequence[T]]:
    """``items`` in order, in at most ``UNITS`` runs of about equal length (the units of work
    ``forked`` queues)."""
    per = -(-len(items) // UNITS)
    return [items[i : i + per] for i in range(0, len(items), per)]


def forked(units: int, processes: int, take: Callable[[int, int], T]) -> list[T]:
    """Run ``take(unit, slot)`` for each unit number below ``units`` (at most ``UNITS``), here
    (slot 0) and in ``processes - 1`` forked helpers (slots 1 and up); return every unit's
    value: this process's, then each helper's as it sent them (pickled through a pipe of its
    own). A helper that failed sends nothing: the caller computes what is missing.

    The unit numbers are a queue every process takes from as it is free (a pipe of numbers,
    all written before forking, then closed, so that it ends for every reader once empty; each
    number one write and one read of ``RECORD`` bytes, which a pipe never splits): on a machine
    other tenants share, a process that gets less CPU takes fewer units instead of holding the
    others up. Called with no other thread running. Ctrl-C or SIGTERM here: the helpers are
    killed (their work is not wanted) and the exception goes on.
    """
    queue_read, queue_write = os.pipe()
    try:
        os.write(queue_write, b"".join(i.to_bytes(RECORD, "big") for i in range(units)))
    finally:
        os.close(queue_write)
    parent = os.getpid()
    helpers: list[tuple[int, BinaryIO]] = []
    out: list[T] = []
    try:
        for slot in range(1, processes):

            def send(sending: BinaryIO, slot: int = slot) -> None:
                done = [take(unit, slot) for unit in _taken(queue_read)]
                pickle.dump(done, sending, protocol=pickle.HIGHEST_PROTOCOL)

            helpers.append(helper(parent, send))
        out.extend(take(unit, 0) for unit in _taken(queue_read))
    except BaseException:  # Ctrl-C, SIGTERM: the helpers stop now, their work is not wanted
        for pid, _ in helpers:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        raise
    finally:
        os.close(queue_read)
        for pid, received in helpers:
            with received, contextlib.suppress(Exception):
                # A pickle, but from our own fork through a pipe only the two processes hold.
                out.extend(pickle.load(received))
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
    return out


def helper(parent: int, send: Callable[[BinaryIO], object]) -> tuple[int, BinaryIO]:
    """Fork a helper of process ``parent`` (this one) that runs ``send`` on the write end of a
    pipe and exits (``worker_init``: it dies with ``parent``); return its pid and the pipe's
    read end, which holds nothing when the helper failed."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the helper: never returns
        code = 1
        try:
            os.close(read_end)
            worker_init(parent)
            with os.fdopen(write_end, "wb") as sending:
                send(sending)
            code = 0
        except BaseException:
            pass
        finally:
            os._exit(code)
    os.close(write_end)
    return pid, os.fdopen(read_end, "rb")


def shared(tasks: Sequence[Callable[[], object]]) -> list[tuple[object, bytes | None]] | None:
    """Run ``tasks`` here and in one forked helper per other CPU (``forked``, as prefetch shares
    modules); return each task's value, in order, with its pickle when a helper computed it (the
    pickle it was sent as). None when no helper can be forked now: one CPU, or another thread
    running (a fork copies a lock another thread may hold). The tasks must be independent of
    each other: each runs in whichever process takes it, on that process's copy of the data
    (the build's checks, flatten/shell/build_cache.py ``checked``). A task a helper failed on
    is run here.
    """
    processes = min(cpus(None), len(tasks))
    if processes < 2 or threading.active_count() != 1:
        return None
    units = split(range(len(tasks)))

    def take(unit: int, slot: int) -> list[tuple[int, object, bytes | None]]:
        if slot:  # a helper: each value pickled on its own, which the caller keeps
            return [(i, None, pickle.dumps(tasks[i](), pickle.HIGHEST_PROTOCOL)) for i in units[unit]]
        return [(i, tasks[i](), None) for i in units[unit]]

    out: list[tuple[object, bytes | None] | None] = [None] * len(tasks)
    for part in forked(len(units), processes, take):
        for i, value, data in part:
            out[i] = (value, None) if data is None else (pickle.loads(data), data)
    return [found if found is not None else (tasks[i](), None) for i, found in enumerate(out)]


def later(compute: Callable[[], T], *, then: Callable[[], object] | None = None) -> Callable[[], T]:
    """Start ``compute()`` in a forked helper now; return a function that takes its value (the
    helper's pickle), for a caller with other work meanwhile (the build's graph checks beside its
    layout: flatten/shell/memo.py ``DiskMemo.later``). Where no helper can be forked (one CPU, no
    fork, another thread running), or the helper failed, the value is computed here instead:
    now, or when it is taken.

    The helper answers, then runs ``then`` (waiting for the cache entries it queued: its parts
    of the checks) before it ends: ``reap`` waits for it at the build's end.
    """
    if cpus(None) < 2 or not hasattr(os, "fork") or threading.active_count() != 1:
        value = compute()
        return lambda: value

    def send(sending: BinaryIO) -> None:
        pickle.dump(compute(), sending, protocol=pickle.HIGHEST_PROTOCOL)
        sending.close()  # answered: the build goes on while this helper's entries are written
        if then is not None:
            then()

    pid, received = helper(os.getpid(), send)

    def take() -> T:
        with received:
            try:
                # A pickle, but from our own fork through a pipe only the two processes hold.
                value: T = pickle.load(received)
            except Exception:  # the helper failed: computed here
                value = compute()
        _WAITING.append(pid)
        return value

    return take


def detached(run: Callable[[], object]) -> bool:
    """Fork a helper that runs ``run`` and sends nothing, waited for at the build's end
    (``reap``); False where none can be forked (no fork, or another thread running)."""
    if not hasattr(os, "fork") or threading.active_count() != 1:
        return False
    try:
        pid, pipe = helper(os.getpid(), lambda _: run())
    except OSError:
        return False
    pipe.close()  # it sends nothing: waited for by its pid
    _WAITING.append(pid)
    return True


# Helpers still writing after they answered (``later``, ``detached``), waited for by ``reap``.
_WAITING: list[int] = []


def reap() -> None:
    """Wait for every helper ``later`` or ``detached`` started (each writing cache entries)."""
    while _WAITING:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(_WAITING.pop(), 0)


def _taken(queue: int) -> Iterator[int]:
    """The unit numbers this process reads from ``queue``, until it is empty."""
    while True:
        record = os.read(queue, RECORD)
        if len(record) != RECORD:
            return
        yield int.from_bytes(record, "big")


def worker_init(parent: int) -> None:
    """Make a worker die with the build: killed outright (SIGTERM while prefetching, SIGKILL), the
    build would otherwise leave its workers waiting forever for work, holding its stderr open."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except Exception:
            pass
    give_freed_back()
    if os.getppid() != parent:  # the build ended before this worker could ask
        os._exit(0)


def give_freed_back() -> None:
    """Fix glibc's mmap threshold (M_MMAP_THRESHOLD) at its default size: in a forked helper, and
    in the flatten program's process for a build (flatten/shell/process.py).

    Freeing a large buffer (a file's text, its UTF-8 for the cache key) otherwise raises the
    threshold to that size, and the parse's large temporaries then stay resident in the heap once
    freed: 15 MiB of a 7 MB file's peak (docs/reliability.md, "Memory"). Elsewhere than glibc
    (no ``mallopt``, another C library) nothing changes.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if os.confstr("CS_GNU_LIBC_VERSION") is None:  # musl has no mallopt to speak of
            return
        libc.mallopt(-3, 128 * 1024)
    except Exception:
        return
