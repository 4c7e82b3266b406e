"""Writing small file trees for a test."""

from __future__ import annotations

from pathlib import Path


def write_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    """Create ``files`` (relative path -> text or bytes) under ``root`` and return ``root``."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def at_fd(name: str, dir_fd: int | None) -> str:
    """The whole path of ``name`` as a call relative to the open directory ``dir_fd`` names it
    (Linux: /proc/self/fd), for tests that stand in for a system call flatten/gate.py makes."""
    import os

    if dir_fd is None or os.path.isabs(name):
        return os.fspath(name)
    return os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), name)
