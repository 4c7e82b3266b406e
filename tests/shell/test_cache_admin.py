"""The cache directory looked after: `flatten cache` (where, how big), `flatten cache clean` (all,
by age, to a size), the size limit applied after a build, and cleaning while builds run (issue 28,
item 8; docs/cache.md)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.files import write_tree

from flatten import gate
from flatten.shell import cache_admin

MAIN = 'resource "terraform_data" "a" {\n  input = "x"\n}\n'
DAY = 86400.0


def flatten(*args: str | Path, cache: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "FLATTEN_CACHE_DIR": str(cache), **env}
    return subprocess.run(
        [sys.executable, "-m", "flatten", *map(str, args)], capture_output=True, text=True, env=environ
    )


def _tree(tmp_path: Path, modules: int = 12, name: str = "src") -> Path:
    files = {"main.tf": "".join(f'module "m{i}" {{\n  source = "./m{i}"\n}}\n' for i in range(modules))}
    for i in range(modules):
        files[f"m{i}/main.tf"] = f'resource "terraform_data" "r{i}" {{\n  input = {i}\n}}\n'
    return write_tree(tmp_path / name, files)


def _files(root: Path) -> list[Path]:
    return sorted(
        p for p in root.rglob("*") if p.is_file() and p.name not in (".pruned", "CACHEDIR.TAG", ".use.lock")
    )


def _stamped(cache: Path) -> Path:
    """A cache directory as flatten makes it (stamped with its CACHEDIR.TAG)."""
    made = gate.open_owned_root(cache, gate.CACHE_OWNER, create=True)
    assert made is not None
    made.close()
    return cache


def _key(name: str, size: int = 40) -> str:
    """An entry's name in flatten's format (hex digits) for a readable label."""
    return hashlib.sha256(name.encode()).hexdigest()[:size]


def _output(out: Path) -> dict[Path, bytes]:
    return {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def _age(path: Path, days: float) -> None:
    then = time.time() - days * DAY
    os.utime(path, (then, then))


def test_cache_shows_where_and_how_much_then_clean_empties_it(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert flatten("cache", cache=cache).stdout.startswith(f"{cache} (not created yet)\n  0 B in 0 entries\n")
    root = _tree(tmp_path)
    assert flatten("build", root, "--out", tmp_path / "out", cache=cache).returncode == 0
    shown = flatten("cache", cache=cache)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == str(cache)
    found = cache_admin.usage(cache)
    assert found.total > 0 and found.count == len(_files(cache)) - len(_files(cache / "v1"))
    assert f"{cache_admin.format_size(found.total)} in {found.count} entries" in lines[1]
    assert any(line.strip().startswith("parse:") for line in lines)
    assert "limit: 1.0 GiB (FLATTEN_CACHE_MAX_SIZE" in shown.stdout
    assert "limit: 500 MiB" in flatten("cache", cache=cache, FLATTEN_CACHE_MAX_SIZE="500M").stdout

    cleaned = flatten("cache", "clean", cache=cache)
    assert cleaned.returncode == 0, cleaned.stderr
    assert f"removed {found.count} entries" in cleaned.stderr
    assert _files(cache) == []
    # And the next build makes it again, with the same output.
    assert flatten("build", root, "--out", tmp_path / "out2", cache=cache).returncode == 0
    assert _output(tmp_path / "out2") == _output(tmp_path / "out")
    assert cache_admin.usage(cache).count > 0


def test_clean_older_than_keeps_recent_entries(tmp_path: Path) -> None:
    cache = _stamped(tmp_path / "cache")
    old = write_tree(cache / "parse", {_key("old1"): "x" * 100, _key("old2"): "y"})
    new = write_tree(cache / "modules", {_key("new"): "z"})
    for name in ("old1", "old2"):
        _age(old / _key(name), 10)
    _age(new / _key("new"), 2)
    proc = flatten("cache", "clean", "--older-than", "7", cache=cache)
    assert proc.returncode == 0 and "removed 2 entries" in proc.stderr
    assert _files(cache) == [new / _key("new")]
    assert flatten("cache", "clean", "--older-than", "1", cache=cache).returncode == 0
    assert _files(cache) == []
    usage_error = flatten("cache", "clean", "--older-than", "1", "--max-size", "1G", cache=cache)
    assert usage_error.returncode == 2 and "give one" in usage_error.stderr


def _package(cache: Path, name: str, size: int, used_days_ago: float) -> Path:
    entry = write_tree(
        cache / "v1" / "packages" / _key(name, 64), {"meta.json": "{}", "files/main.tf": "#" * size}
    )
    _age(entry / "meta.json", used_days_ago)
    return entry


def test_prune_removes_the_oldest_first_and_nothing_in_use(tmp_path: Path) -> None:
    cache = _stamped(tmp_path / "cache")
    for i in range(10):  # 10 entries of 64 KiB, the older the lower i
        write_tree(cache / "parse", {_key(f"e{i}"): b"\0" * 65536})
        _age(cache / "parse" / _key(f"e{i}"), 30 - i)
    fresh = write_tree(cache / "emit", {_key("now"): b"\0" * 65536})  # written just now: maybe in use
    old_package = _package(cache, "old", 65536, 40)
    used_package = _package(cache, "used", 65536, 0)  # looked up by a build running now
    total = cache_admin.usage(cache).total
    assert total >= 13 * 65536
    count, size = cache_admin.prune(cache, total // 2)
    assert count > 0 and cache_admin.usage(cache).total == total - size <= total // 2 * 9 // 10
    left = {p.name for p in (cache / "parse").iterdir()}
    assert not old_package.exists()  # the oldest of all went first
    assert left == {_key(f"e{i}") for i in range(10 - len(left), 10)}  # the newest stay
    assert (fresh / _key("now")).exists() and used_package.exists()


def test_a_build_applies_the_limit_at_most_once_an_hour(tmp_path: Path) -> None:
    cache = _stamped(tmp_path / "cache")
    write_tree(cache / "parse", {_key("big"): b"\0" * (1 << 20)})
    _age(cache / "parse" / _key("big"), 5)
    root = _tree(tmp_path, modules=2)
    proc = flatten("build", root, "--out", tmp_path / "out", cache=cache, FLATTEN_CACHE_MAX_SIZE="256K")
    assert proc.returncode == 0, proc.stderr
    assert not (cache / "parse" / _key("big")).exists()
    assert cache_admin.usage(cache).total > 0  # this build's own entries are kept (in use)
    # Within the hour the next build does not look again (a stat of the stamp).
    write_tree(cache / "parse", {_key("big2"): b"\0" * (1 << 20)})
    _age(cache / "parse" / _key("big2"), 5)
    flatten("build", root, "--out", tmp_path / "out3", cache=cache, FLATTEN_CACHE_MAX_SIZE="256K")
    assert (cache / "parse" / _key("big2")).exists()
    _age(cache / ".pruned", 1 / 12)  # two hours ago
    other = _tree(tmp_path, modules=3, name="other")  # a build that runs (a replay writes no entries)
    flatten("build", other, "--out", tmp_path / "out4", cache=cache, FLATTEN_CACHE_MAX_SIZE="256K")
    assert not (cache / "parse" / _key("big2")).exists()
    # Without the limit's variable, 1 GiB: nothing this small is pruned.
    assert cache_admin.max_size({}) == 1 << 30 and cache_admin.max_size({"FLATTEN_CACHE_MAX_SIZE": "0"}) == 0


def test_a_cache_made_now_is_stamped_pruned_and_an_existing_one_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache this process makes holds nothing older than ``GRACE`` until ``PRUNE_EVERY`` has
    passed, so its first prune could remove nothing: it is stamped pruned as it is made (a cold
    build's prune walked all its own entries). A directory that was there already (restored,
    adopted) is left to the prune."""
    from flatten.shell import cache_dir

    assert cache_admin.PRUNE_EVERY <= cache_admin.GRACE  # what makes skipping the walk exact
    walked: list[Path] = []
    monkeypatch.setattr(cache_admin, "prune", lambda root, limit, now=None: walked.append(root) or (0, 0))
    made = tmp_path / "new"
    monkeypatch.setenv("FLATTEN_CACHE_DIR", str(made))
    assert cache_dir.area(made / "parse") is not None
    assert (made / ".pruned").is_file() and (made / ".pruned").stat().st_mtime > time.time() - 60
    cache_admin.maybe_prune(made, {"FLATTEN_CACHE_MAX_SIZE": "1K"})
    assert walked == []
    empty = tmp_path / "empty"  # as prefetch makes it before any entry (to mark it)
    empty.mkdir()
    monkeypatch.setenv("FLATTEN_CACHE_DIR", str(empty))
    assert cache_dir.area(empty / "parse") is not None and (empty / ".pruned").is_file()
    existing = _stamped(tmp_path / "existing")  # restored: flatten's, with an entry of last week
    write_tree(existing / "parse", {_key("old"): b"x" * 4096})
    _age(existing / "parse" / _key("old"), 7)
    monkeypatch.setenv("FLATTEN_CACHE_DIR", str(existing))
    assert cache_dir.area(existing / "modules") is not None
    assert not (existing / ".pruned").exists()
    cache_admin.maybe_prune(existing, {"FLATTEN_CACHE_MAX_SIZE": "1K"})
    assert walked == [existing]


def test_cleaning_while_builds_run_never_breaks_one(tmp_path: Path) -> None:
    """Entries vanish under running builds (a clean in a loop): each build still succeeds, with
    the same output (a vanished entry is a miss; an open one stays readable)."""
    cache = tmp_path / "cache"
    root = _tree(tmp_path, modules=40)
    assert flatten("build", root, "--out", tmp_path / "ref", cache=cache).returncode == 0
    expected = {
        p.relative_to(tmp_path / "ref"): p.read_bytes() for p in (tmp_path / "ref").rglob("*") if p.is_file()
    }
    env = {**os.environ, "FLATTEN_CACHE_DIR": str(cache)}
    cleaner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom flatten.shell.cache_admin import clean\n"
            "end = time.time() + 60\n"
            "while time.time() < end:\n    clean(__import__('pathlib').Path(sys.argv[1]))\n",
            str(cache),
        ],
        env=env,
    )
    try:
        for i in range(6):
            # a fresh --out each time: no replay of the previous build, the caches are used
            out = tmp_path / f"out{i}"
            proc = flatten("build", root, "--out", out, cache=cache)
            assert proc.returncode == 0, proc.stderr
            got = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
            assert got == expected
    finally:
        cleaner.kill()
        cleaner.wait()


def test_sizes_are_read_and_shown() -> None:
    assert cache_admin.parse_size("1G") == cache_admin.parse_size("1GiB") == 1 << 30
    assert cache_admin.parse_size("500M") == 500 << 20
    assert cache_admin.parse_size("1073741824") == 1 << 30
    assert cache_admin.format_size(0) == "0 B"
    assert cache_admin.format_size(1536) == "1.5 KiB"
    assert cache_admin.format_size(1 << 30) == "1.0 GiB"
    for bad in ("", "lots", "1X"):
        try:
            cache_admin.parse_size(bad)
        except ValueError:
            continue
        raise AssertionError(bad)


def test_clean_removes_only_what_flatten_made(tmp_path: Path) -> None:
    """A FLATTEN_CACHE_DIR set to a directory holding other things keeps them."""
    cache = write_tree(
        tmp_path / "home", {"notes/todo.txt": "keep", "parse/e": "x", "v1/packages/p/meta.json": "{}"}
    )
    before = _files(cache)
    proc = flatten("cache", "clean", cache=cache)
    assert proc.returncode == 1 and "not flatten's cache" in proc.stderr
    assert "nothing was removed" in proc.stderr
    assert _files(cache) == before
    assert "not flatten's cache" in flatten("cache", cache=cache).stdout
