"""Running flatten's command line in a test, and the files hostile-input tests make.

Every run is ``python -m flatten`` in a child process with its own cache directory (nothing is
written outside the test's temporary directory) and without ``FLATTEN_TRACEBACK`` (a test sees
what a user sees).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

#: An mtime (nanoseconds, 2020) older than any build's start: a build record may be written for
#: inputs this old (flatten/shell/replay.py keeps none for files changed during the build).
OLD = 1_600_000_000 * 10**9

__all__ = ["OLD", "age_tree", "run_cli", "run_flatten", "sparse_file"]


def run_flatten(
    *args: str | Path,
    cache: Path,
    cwd: Path | None = None,
    timeout: float = 120,
    preexec_fn: Callable[[], None] | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m flatten ARGS`` with ``FLATTEN_CACHE_DIR=cache`` (``env`` adds or
    overrides variables); its output as text."""
    environ = {**os.environ, "FLATTEN_CACHE_DIR": str(cache), **(env or {})}
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


def age_tree(root: Path) -> None:
    """Give every file and directory under ``root`` (itself included) the mtime ``OLD``."""
    for current, _, names in os.walk(root):
        for name in names:
            os.utime(os.path.join(current, name), ns=(OLD, OLD))
        os.utime(current, ns=(OLD, OLD))


def run_cli(argv: list[str], calls: list[int]) -> int:
    """Run the command line in this process as the flatten program does (``shell.process`` runs
    its build requests); ``calls`` counts the builds that ran (not replayed). The exit code."""
    import pytest

    from flatten import cli
    from flatten.shell import process

    real = cli.run_request

    def counting(request: cli.BuildRequest) -> int:
        calls.append(1)
        return real(request)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(cli, "run_request", counting)
        m.setattr(sys, "argv", ["flatten", *argv])
        try:
            cli.main(runner=process.run_build)
        except SystemExit as exc:
            return int(exc.code or 0)
    return 0
