"""Running flatten's command line in a test, and the files hostile-input tests make.

Every run is ``python -m flatten`` in a child process with its own cache directory (nothing is
written outside the test's temporary directory) and without ``FLATTEN_TRACEBACK`` (a test sees
what a user sees).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["run_flatten", "sparse_file"]


def run_flatten(
    *args: str | Path,
    cache: Path,
    cwd: Path | None = None,
    timeout: float = 120,
    preexec_fn: Callable[[], None] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m flatten ARGS`` with ``FLATTEN_CACHE_DIR=cache``; its output as text."""
    environ = {**os.environ, "FLATTEN_CACHE_DIR": str(cache)}
    environ.pop("FLATTEN_TRACEBACK", None)
    return subprocess.run(
        [sys.executable, "-m", "flatten", *map(str, args)],
        capture_output=True,
        text=True,
        env=environ,
        cwd=cwd,
        timeout=timeout,
        preexec_fn=preexec_fn,
    )


def sparse_file(path: Path, size: int) -> Path:
    """Make ``path`` (replacing any file there) a sparse file of ``size`` bytes: no disk used, and
    minutes to read whole on any machine."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    with open(path, "wb") as f:
        f.truncate(size)
    return path
