"""The parse cache, parallel prefetching and whole-build records (``flatten.parse_cache``)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import write_tree

from flatten import parse_cache
from flatten.build import build
from flatten.hcl import parse_native
from flatten.options import Dialect, Options

OLD = 1_000_000_000  # an mtime (2001) safely older than any build


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv("FLATTEN_CACHE_DIR", str(directory))
    monkeypatch.delenv("FLATTEN_PARSE_CACHE", raising=False)
    monkeypatch.setattr(parse_cache, "_CACHE", {})
    monkeypatch.setattr(parse_cache, "_MEMO", {})
    return directory


def _tree(root: Path, modules: int = 6) -> Path:
    files = {
        "main.tf": "".join(f'module "m{i}" {{\n  source = "./modules/m{i}"\n}}\n' for i in range(modules))
    }
    for i in range(modules):
        files[f"modules/m{i}/main.tf"] = (
            f'variable "v" {{\n  default = {i}\n}}\n'
            f'resource "null_resource" "r" {{\n  triggers = {{ v = "${{var.v}}-{i}" }}\n}}\n'
        )
        files[f"modules/m{i}/override.tf"] = 'variable "v" {\n  default = 7\n}\n'
    write_tree(root, files)
    return root


def _age(root: Path) -> None:
    for current, _, names in os.walk(root):
        for name in names:
            os.utime(os.path.join(current, name), ns=(OLD, OLD))
        os.utime(current, ns=(OLD, OLD))


def test_cache_root(tmp_path: Path) -> None:
    assert parse_cache.cache_root({"FLATTEN_CACHE_DIR": "/x"}) == Path("/x")
    assert parse_cache.cache_root({"XDG_CACHE_HOME": "/y"}) == Path("/y/flatten")
    assert parse_cache.cache_root({}) == Path.home() / ".cache" / "flatten"


def test_hit_returns_the_same_and_does_not_parse(monkeypatch: pytest.MonkeyPatch, _cache_dir: Path) -> None:
    text = 'locals {\n  a = "x-${var.y}"\n  b = 1.5\n}\n'
    first = parse_cache.parse_cached(text, "main.tf", "native", options=Options())
    assert repr(first) == repr(parse_native(text, "main.tf", options=Options()))
    assert list((_cache_dir / "parse").rglob("*"))

    def boom(*args: object) -> None:
        raise AssertionError("parsed again")

    monkeypatch.setattr(parse_cache, "_parse", boom)
    assert repr(parse_cache.parse_cached(text, "main.tf", "native", options=Options())) == repr(first)


def test_key_covers_text_name_syntax_dialect() -> None:
    cache = parse_cache.default_cache()
    assert cache is not None
    base = cache.key("a = 1\n", "a.tf", "native", Dialect.TERRAFORM)
    assert base != cache.key("a = 2\n", "a.tf", "native", Dialect.TERRAFORM)
    assert base != cache.key("a = 1\n", "b.tf", "native", Dialect.TERRAFORM)
    assert base != cache.key("a = 1\n", "a.tf", "json", Dialect.TERRAFORM)
    assert base != cache.key("a = 1\n", "a.tf", "native", Dialect.OPENTOFU)
    assert base == cache.key("a = 1\n", "a.tf", "native", Dialect.TERRAFORM)


def test_corrupt_entry_is_ignored_and_rewritten(_cache_dir: Path) -> None:
    text = "locals {\n  a = 1\n}\n"
    good = parse_cache.parse_cached(text, "m.tf", "native", options=Options())
    (entry,) = [p for p in (_cache_dir / "parse").rglob("*") if p.is_file()]
    for junk in (b"", b"garbage", entry.read_bytes()[:-5]):
        entry.write_bytes(junk)
        assert repr(parse_cache.parse_cached(text, "m.tf", "native", options=Options())) == repr(good)
    assert entry.read_bytes().startswith(b"flatten-parse-1")


def test_json_files_are_cached_too() -> None:
    text = '{"locals": {"a": "${b}"}}'
    first = parse_cache.parse_cached(text, "m.tf.json", "json", options=Options())
    assert repr(parse_cache.parse_cached(text, "m.tf.json", "json", options=Options())) == repr(first)


def test_turned_off(monkeypatch: pytest.MonkeyPatch, _cache_dir: Path) -> None:
    monkeypatch.setenv("FLATTEN_PARSE_CACHE", "off")
    parse_cache.parse_cached("locals {\n  a = 1\n}\n", "m.tf", "native", options=Options())
    assert not _cache_dir.exists()


def test_concurrent_writers(_cache_dir: Path) -> None:
    texts = [f"locals {{\n  a = {i % 5}\n}}\n" for i in range(60)]
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for text in texts:
                parse_cache.parse_cached(text, "m.tf", "native", options=Options())
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert not list((_cache_dir / "parse").rglob(".*.tmp"))
    assert len([p for p in (_cache_dir / "parse").rglob("*") if p.is_file()]) == 5


def test_prefetch_parallel_matches_serial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _tree(tmp_path / "src", modules=12)
    want = build(root, options=Options())[0].files
    monkeypatch.setattr(parse_cache, "_CACHE", {})
    monkeypatch.setenv("FLATTEN_CACHE_DIR", str(tmp_path / "cache2"))
    monkeypatch.setattr(parse_cache, "MIN_PARALLEL_FILES", 2)
    monkeypatch.setattr(parse_cache, "MIN_PARALLEL_BYTES", 1)
    assert parse_cache.prefetch(root, options=Options(), workers=2) == 24
    parse_cache.finish()
    assert len([p for p in (tmp_path / "cache2" / "parse").rglob("*") if p.is_file()]) == 25
    assert parse_cache.prefetch(root, options=Options(), workers=2) == 0  # everything cached now

    def boom(*args: object) -> None:
        raise AssertionError("parsed again")

    monkeypatch.setattr(parse_cache, "_parse", boom)
    assert build(root, options=Options())[0].files == want


def test_prefetch_never_raises(tmp_path: Path) -> None:
    assert parse_cache.prefetch(tmp_path / "missing", options=Options()) == 0


def _cli(argv: list[str], calls: list[int]) -> None:
    def run() -> None:
        calls.append(1)
        from flatten.cli import main

        sys.argv = ["flatten", *argv]
        main()

    try:
        parse_cache.run_build_command(argv, run)
    except SystemExit as exc:
        assert exc.code in (0, None)


def test_build_record_replays_only_when_nothing_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _tree(tmp_path / "src")
    _age(root)
    out = tmp_path / "out"
    argv = ["build", str(root), "--out", str(out)]
    calls: list[int] = []
    _cli(argv, calls)
    first = capsys.readouterr().err
    assert calls == [1] and "wrote" in first
    _cli(argv, calls)
    assert calls == [1] and capsys.readouterr().err == first  # replayed, same messages
    (root / "modules" / "m1" / "main.tf").write_text('variable "v" {\n  default = 2\n}\n')
    _cli(argv, calls)
    assert calls == [1, 1]
    _age(root)
    _cli(argv, calls)
    _cli(argv, calls)
    assert calls == [1, 1, 1]
    (out / "main.tf.json").write_text("{}")  # the output was touched: build again
    _cli(argv, calls)
    assert calls == [1, 1, 1, 1]
    (root / "notes.txt").write_text("copied along")  # a new file beside a module
    _age(root)
    _cli(argv, calls)
    assert calls == [1, 1, 1, 1, 1] and (out / "notes.txt").exists()


def test_build_record_refused_for_fresh_inputs(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src")  # written just now: it may still be changing
    out = tmp_path / "out"
    calls: list[int] = []
    for _ in range(2):
        _cli(["build", str(root), "--out", str(out)], calls)
    assert calls == [1, 1]


def test_command_lines_it_does_not_understand_run_unchanged(tmp_path: Path) -> None:
    calls: list[int] = []
    parse_cache.run_build_command(["graph", "."], lambda: calls.append(1))
    parse_cache.run_build_command(["build", ".", "--out", "o", "--unknown"], lambda: calls.append(2))
    assert calls == [1, 2]
    assert parse_cache._plain_build(["build", "r", "-o", "o", "--dialect=opentofu"]) == (
        Path("r").resolve(),
        Path("o").resolve(),
        Dialect.OPENTOFU,
        True,
    )
    assert parse_cache._plain_build(["build", "r", "--out", "o", "--check"])[3] is False  # type: ignore[index]


def test_entry_point_end_to_end(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src")
    _age(root)
    env = {**os.environ, "FLATTEN_CACHE_DIR": str(tmp_path / "c")}
    outs = []
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-m", "flatten", "build", str(root), "--out", str(tmp_path / "out")],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        outs.append(proc.stderr)
    assert outs[0] == outs[1] and "wrote" in outs[0]
    assert list((tmp_path / "c" / "builds").iterdir())
