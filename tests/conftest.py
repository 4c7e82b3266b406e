from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"


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


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep every test away from the user's real caches and cache key (~/.cache/flatten,
    ~/.local/state/flatten): each test gets its own, which subprocesses inherit. A test may set
    its own afterwards."""
    from flatten.shell import build_cache, parse_cache

    base = tmp_path_factory.mktemp("flatten-cache")
    monkeypatch.setenv("FLATTEN_CACHE_DIR", str(base / "cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(base / "xdg-cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(base / "xdg-state"))
    monkeypatch.delenv("FLATTEN_CACHE_KEY", raising=False)
    # The caches remember their directory once found: forget it, as a new process would.
    monkeypatch.setattr(parse_cache, "_CACHE", {})
    monkeypatch.setattr(build_cache, "_STATE", {})


@pytest.fixture
def tree(tmp_path: Path):
    """Return a function that writes a file tree into a fresh directory."""

    def make(files: dict[str, str | bytes]) -> Path:
        return write_tree(tmp_path / "src", files)

    return make
