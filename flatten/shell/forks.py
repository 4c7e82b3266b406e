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

__all__ = ["RECORD", "UNITS", "cpus", "shared", "worker_init"]

RECORD = 4  # bytes of one unit number in a queue of work
UNITS = 4096  # at most this many numbers in one queue (16 KB: a pipe holds 64 KB)


def cpus(workers: int | None) -> int:
    """``workers`` when given, else how many CPUs this process may run on."""
    if workers:
        return workers
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def shared(tasks: Sequence[Callable[[], object]]) -> list[tuple[object, bytes | None]] | None:
    """Run ``tasks`` here and in one forked helper per other CPU, the way prefetch's
    ``_compute_shared`` shares modules (a pipe of task numbers each process takes from as it is
    free); return each task's value, in order, with its pickle when a helper computed it (the
    pickle it was sent as). None when no helper can be forked now: one CPU, or another thread
    running (a fork copies a lock another thread may hold). The tasks must be independent of
    each other: each runs in whichever process takes it, on that process's copy of the data
    (the build's checks, flatten/shell/build_cache.py ``checked``). A task a helper failed on
    is run here.
    """
    processes = min(cpus(None), len(tasks))
    if processes < 2 or threading.active_count() != 1:
        return None
    per = -(-len(tasks) // UNITS)
    units = [list(range(i, min(i + per, len(tasks)))) for i in range(0, len(tasks), per)]
    queue_read, queue_write = os.pipe()
    try:
        os.write(queue_write, b"".join(i.to_bytes(RECORD, "big") for i in range(len(units))))
    finally:
        os.close(queue_write)
    parent = os.getpid()
    helpers: list[tuple[int, int]] = []
    out: list[tuple[object, bytes | None] | None] = [None] * len(tasks)
    try:
        for _ in range(processes - 1):
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:  # the helper: never returns
                code = 1
                try:
                    os.close(read_end)
                    worker_init(parent)
                    done = [
                        (i, pickle.dumps(tasks[i](), protocol=pickle.HIGHEST_PROTOCOL))
                        for i in _take_units(queue_read, units)
                    ]
                    with os.fdopen(write_end, "wb") as sending:
                        pickle.dump(done, sending, protocol=pickle.HIGHEST_PROTOCOL)
                    code = 0
                except BaseException:
                    pass
                finally:
                    os._exit(code)
            os.close(write_end)
            helpers.append((pid, read_end))
        for i in _take_units(queue_read, units):
            out[i] = (tasks[i](), None)
    except BaseException:  # Ctrl-C, SIGTERM: the helpers stop now, their work is not wanted
        for pid, _ in helpers:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        raise
    finally:
        os.close(queue_read)
        for pid, read_end in helpers:
            with os.fdopen(read_end, "rb") as received, contextlib.suppress(Exception):
                # A pickle, but from our own fork through a pipe only the two processes hold.
                for i, data in pickle.load(received):
                    out[i] = (pickle.loads(data), data)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
    return [found if found is not None else (tasks[i](), None) for i, found in enumerate(out)]


def _take_units(queue: int, units: list[list[int]]) -> Iterator[int]:
    """The task numbers of the units whose numbers this process reads from ``queue``, until it is
    empty."""
    while True:
        record = os.read(queue, RECORD)
        if len(record) != RECORD:
            return
        yield from units[int.from_bytes(record, "big")]


def worker_init(parent: int) -> None:
    """Make a worker die with the build: killed outright (SIGTERM while prefetching, SIGKILL), the
    build would otherwise leave its workers waiting forever for work, holding its stderr open."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
            # A fixed mmap threshold (M_MMAP_THRESHOLD, glibc's default size): freeing a large
            # buffer (a file's text, its UTF-8 for the cache key) otherwise raises the threshold
            # to that size, and the parse's large temporaries then stay resident in the heap
            # once freed: 15 MiB of a 7 MB file's peak (docs/reliability.md, "Memory").
            libc.mallopt(-3, 128 * 1024)
        except Exception:
            pass
    if os.getppid() != parent:  # the build ended before this worker could ask
        os._exit(0)
