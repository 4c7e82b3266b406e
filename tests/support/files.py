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
