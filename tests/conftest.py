from __future__ import annotations

import sys
from pathlib import Path

import pytest

# tests/ on the path: shared helpers are imported as ``support.<module>`` (tests/support). Test
# modules never import one another (pytest's importlib mode, pyproject), only support.
sys.path.insert(0, str(Path(__file__).parent))
# Their asserts explain themselves as a test module's do (before anything imports them).
pytest.register_assert_rewrite("support")

from support.files import write_tree  # noqa: E402


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
    # Text diagnostics wrap their details at the terminal's width, 80 when piped (as terraform's
    # do): tests that read a detail's words are not about where lines break, so give them room.
    # tests/cli/test_terminal.py and test_help.py set or clear COLUMNS to test the wrapping itself.
    monkeypatch.setenv("COLUMNS", "1000")
    # The caches remember their directory once found: forget it, as a new process would.
    monkeypatch.setattr(parse_cache, "_CACHE", {})
    monkeypatch.setattr(build_cache, "_STATE", {})


@pytest.fixture
def tree(tmp_path: Path):
    """Return a function that writes a file tree into a fresh directory."""

    def make(files: dict[str, str | bytes]) -> Path:
        return write_tree(tmp_path / "src", files)

    return make
