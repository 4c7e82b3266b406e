"""Work beside the build in a forked helper (flatten/shell/forks.py ``later``)."""

from __future__ import annotations

import os
import threading

import pytest

from flatten.shell import forks

pytestmark = pytest.mark.skipif(
    not hasattr(os, "fork") or len(os.sched_getaffinity(0)) < 2, reason="needs fork and two CPUs"
)


@pytest.fixture(autouse=True)
def _no_writer_thread() -> None:
    """A build earlier in this process may have left the caches' writer threads running: a
    process with another thread forks no helper (the rule under test in the last case)."""
    from flatten.shell import prefetch

    prefetch.finish()  # and build_cache.finish: every writer thread joined
    if threading.active_count() != 1:
        pytest.skip("another thread runs in this process (not one of flatten's writers)")


def test_later_computes_in_a_helper_and_the_value_is_taken_here() -> None:
    here = os.getpid()
    done: list[str] = []
    take = forks.later(lambda: (os.getpid(), [1, "a"]), then=lambda: done.append("then"))
    pid, value = take()
    assert pid != here and value == [1, "a"]
    assert done == [], "then runs in the helper, after it answered"
    forks.reap()
    assert not forks._WAITING


def test_a_helper_that_fails_leaves_the_value_to_this_process() -> None:
    here = os.getpid()

    def compute() -> int:
        if os.getpid() != here:
            raise RuntimeError("the helper fails")
        return 7

    assert forks.later(compute)() == 7
    forks.reap()


def test_with_another_thread_running_the_value_is_computed_now() -> None:
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        take = forks.later(os.getpid)
    finally:
        stop.set()
        other.join()
    assert take() == os.getpid()
    assert not forks._WAITING
