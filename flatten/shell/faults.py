"""Fault points for tests: end the process outright at a named step of writing the output.

``FLATTEN_TEST_KILL_AT=STEP`` (a step name flatten/stages/output.py ``write_tree`` passes to its
``fault`` hook: ``written``, ``adopt:N``, ``aside``, ``swapped``, ``readopted``; inside a mount
point ``in-place:`` and those or ``leave:N``, ``arrive:N``) makes the process send itself SIGKILL
when it reaches that step, so a test can show
that a build killed at any step of the swap loses nothing: the next build puts everything back
(docs/reliability.md, "Your files and the output directory"). Deterministic where a timed kill
hits a step once in many tries. Read from the process's environment here, at the edge: no stage
reads it, and it is not an input of the build (lang/environ.py).
"""

from __future__ import annotations

import os
import signal

from flatten.stages.output import Fault

__all__ = ["ENV", "fault_hook"]

ENV = "FLATTEN_TEST_KILL_AT"


def fault_hook() -> Fault | None:
    """Return the hook ``write_tree`` calls at each step (None when no fault is asked for)."""
    wanted = os.environ.get(ENV)
    if not wanted:
        return None

    def hook(step: str) -> None:
        if step == wanted:
            os.kill(os.getpid(), signal.SIGKILL)

    return hook
