"""Running one job per item across cores, in forked processes, with results back in item order.

A many-root build (flatten/shell/roots.py) builds each root in one of a few forked children:
they inherit what the parent loaded (flatten/shell/shared_memo.py) and run the same code, so no
start-up is paid again. The rules are prefetch's (flatten/shell/prefetch.py): fork only from a
process with no other thread (a lock another thread holds would stay held in the child), and
each child dies with its parent (``PR_SET_PDEATHSIG`` on Linux; SIGTERM, so that a child
swapping an output in undoes it), and the children are sent SIGTERM when the parent stops early
(Ctrl-C, SIGTERM). Items go to children in turn
(item ``i`` to child ``i % workers``); a child sends each result, pickled, as soon as it has it,
and the parent reads every child at once, so ``done`` (the progress line) sees results in
completion order while the returned list is in item order. Where forking is not possible (no
``fork``, another thread running, one worker or one item) the items run here, one by one.

A child that dies without sending a result (killed, out of memory) leaves that item ``None``.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import selectors
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from flatten.shell.forks import give_freed_back

__all__ = ["cpus", "run_all", "run_apart"]

T = TypeVar("T")

_SIZE = 8  # bytes of each frame's length


def cpus() -> int:
    """Return how many CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def run_all(
    count: int,
    job: Callable[[int], T],
    *,
    workers: int,
    done: Callable[[int], None] | None = None,
    before_fork: Callable[[], None] | None = None,
) -> list[T | None]:
    """Return ``[job(0), ..., job(count - 1)]``, computed in up to ``workers`` forked processes.

    ``done(i)`` is called in this process as each item's result arrives. ``before_fork`` runs
    once before forking (to stop background writer threads). ``job`` must not raise: an item
    whose job raised (or whose child died) is ``None``.
    """
    workers = max(1, min(workers, count))
    if workers > 1 and hasattr(os, "fork") and before_fork is not None:
        before_fork()
    if workers == 1 or not hasattr(os, "fork") or threading.active_count() > 1:
        results: list[T | None] = []
        for i in range(count):
            try:
                results.append(job(i))
            except Exception:
                results.append(None)
            if done is not None:
                done(i)
        return results
    return _forked(count, job, workers, done)


def run_apart(job: Callable[[], T], *, before_fork: Callable[[], None] | None = None) -> T | None:
    """Return ``job()``, computed in one forked process (None when it raised or its child died).

    What the job allocates is given back whole when its child ends: its peak is its own, never
    under this process's later ones (Python keeps the memory it freed, in pieces too small for the
    next large allocations). Where forking is not possible, it runs here.
    """
    if hasattr(os, "fork") and before_fork is not None:
        before_fork()
    if not hasattr(os, "fork") or threading.active_count() > 1:
        try:
            return job()
        except Exception:
            return None
    return _forked(1, lambda _: job(), 1, None)[0]


def _forked(
    count: int, job: Callable[[int], T], workers: int, done: Callable[[int], None] | None
) -> list[T | None]:
    parent = os.getpid()
    children: list[int] = []
    selector = selectors.DefaultSelector()
    for w in range(workers):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(read_end)
            _child(parent, write_end, range(w, count, workers), job)
        os.close(write_end)
        children.append(pid)
        selector.register(read_end, selectors.EVENT_READ, bytearray())
    results: list[T | None] = [None] * count
    try:
        _collect(selector, results, done)
    except BaseException:  # Ctrl-C, SIGTERM (emit.Interrupted), a bug: the children stop too
        for pid in children:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
        raise
    finally:
        for key in list(selector.get_map().values()):
            os.close(key.fd)
        selector.close()
        for pid in children:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
    return results


def _collect(
    selector: selectors.BaseSelector, results: list[T | None], done: Callable[[int], None] | None
) -> None:
    """Read every child's frames until each pipe ends, keeping each result at its item's index."""
    while selector.get_map():
        for key, _ in selector.select():
            buffer: bytearray = key.data
            chunk = os.read(key.fd, 1 << 20)
            if not chunk:
                selector.unregister(key.fd)
                os.close(key.fd)
                continue
            buffer += chunk
            while len(buffer) >= _SIZE:
                size = int.from_bytes(buffer[:_SIZE], "big")
                if len(buffer) < _SIZE + size:
                    break
                # A pickle, but from our own fork through a pipe only the two processes hold.
                index, value = pickle.loads(bytes(buffer[_SIZE : _SIZE + size]))
                del buffer[: _SIZE + size]
                results[index] = value
                if done is not None:
                    done(index)


def _die_with(parent: int) -> None:
    """Make this child get SIGTERM when its parent dies (Linux), and leave at once when the parent
    is gone already. SIGTERM, not prefetch's SIGKILL: a child swapping a root's output in undoes
    its half-done swap on SIGTERM (emit.write_tree), and otherwise simply ends."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except Exception:
            pass
    # A child parses (a rebuild's edited module, flatten/shell/incremental.py): its freed large
    # temporaries go back to the system, as a prefetching process's do.
    give_freed_back()
    if os.getppid() != parent:
        os._exit(1)


def _child(parent: int, write_end: int, items: Sequence[int], job: Callable[[int], T]) -> None:
    code = 1
    try:
        from flatten.shell.prefetch import finish

        _die_with(parent)
        with os.fdopen(write_end, "wb") as sending:
            for i in items:
                try:
                    value: T | None = job(i)
                except Exception:
                    value = None
                frame = pickle.dumps((i, value), protocol=pickle.HIGHEST_PROTOCOL)
                sending.write(len(frame).to_bytes(_SIZE, "big") + frame)
                sending.flush()
        finish()  # the cache entries this child queued for writing
        code = 0
    except BaseException:
        pass
    finally:
        os._exit(code)
