"""A copy of this checkout's files (tracked and new, not ignored) for tests that build or install it.

Packaging and pre-commit tests work on a copy: building writes `*.egg-info` and `build/` beside
the sources, and pre-commit needs a git repository whose HEAD is the code under test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from support.paths import REPO

# Without git (an unpacked archive): everything but these.
_IGNORED = shutil.ignore_patterns(
    ".git", ".venv", "__pycache__", "*.egg-info", ".*_cache", ".hypothesis", "build", "dist"
)


def project_files() -> list[str]:
    """Return the checkout's files as relative POSIX paths: what a commit of it would hold."""
    if shutil.which("git") and (REPO / ".git").exists():
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
        ).stdout.decode()
        return sorted(rel for rel in listed.split("\0") if rel and (REPO / rel).is_file())
    files = []
    for dirpath, dirnames, filenames in os.walk(REPO):
        ignored = _IGNORED(dirpath, [*dirnames, *filenames])
        dirnames[:] = [d for d in dirnames if d not in ignored]
        files.extend((Path(dirpath) / f).relative_to(REPO).as_posix() for f in filenames if f not in ignored)
    return sorted(files)


def copy_project(dest: Path) -> Path:
    """Copy the checkout's files into ``dest`` (created) and return it."""
    for rel in project_files():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, target)
    return dest
