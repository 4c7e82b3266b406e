"""The parse cache, the module cache, parallel prefetching and whole-build records.

(``flatten.shell.parse_cache``, ``flatten.shell.build_cache``, ``flatten.shell.prefetch``,
``flatten.shell.replay`` and ``flatten.shell.process``.)
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from support.cli import age_tree, run_cli
from support.files import write_tree
from typer.testing import CliRunner

from flatten import cli
from flatten.build import BuildResult, build
from flatten.lang.diagnostics import Diagnostics
from flatten.lang.model import (
    Attribute,
    Block,
    Body,
    Expr,
    Module,
    Pos,
    Range,
    make_attribute,
    make_block,
    make_body,
    make_expr,
    make_pos,
    make_range,
)
from flatten.lang.options import Dialect, Options
from flatten.shell import build_cache, parse_cache, process, replay
from flatten.shell import prefetch as prefetching
from flatten.shell.memo import DiskMemo
from flatten.stages import merge
from flatten.stages.load import load_dir, load_module
from flatten.stages.memo import MemoKey
from flatten.syntax.hcl import parse_native


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv("FLATTEN_CACHE_DIR", str(directory))
    monkeypatch.delenv("FLATTEN_PARSE_CACHE", raising=False)
    monkeypatch.delenv("FLATTEN_MODULE_CACHE", raising=False)
    _reset(monkeypatch)
    return directory


def _reset(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget every cache's in-process state (as a new process would start)."""
    prefetching.finish()
    monkeypatch.setattr(parse_cache, "_CACHE", {})
    monkeypatch.setattr(parse_cache, "_MEMO", {})
    monkeypatch.setattr(build_cache, "_STATE", {})
    monkeypatch.setattr(build_cache, "MEMO", {})
    monkeypatch.setattr(build_cache, "PREREAD", {})
    monkeypatch.setattr(build_cache, "EMITTED", {})
    monkeypatch.setattr(build_cache, "READ", set())


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

    monkeypatch.setattr(parse_cache, "parse_file", boom)
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
    assert entry.read_bytes().startswith(b"flatten-parse-3")


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


def _files(directory: Path) -> list[Path]:
    return [p for p in directory.rglob("*") if p.is_file()] if directory.exists() else []


def _uncached_build(root: Path, monkeypatch: pytest.MonkeyPatch, **options: object) -> dict[str, bytes]:
    """A fresh build with every cache off (the reference a cached build must equal byte for byte)."""
    with monkeypatch.context() as m:
        m.setenv("FLATTEN_PARSE_CACHE", "off")
        _reset(m)
        files = build(root, options=Options(**options))[0].files  # type: ignore[arg-type]
        _reset(m)
    return files


def _build(root: Path, *, options: Options) -> tuple[BuildResult, Diagnostics]:
    """A build through the disk memo, as the command line runs it."""
    return build(root, options=options, memo=DiskMemo())


def _boom(*args: object, **kwargs: object) -> None:
    raise AssertionError("computed again")


def test_prefetch_parallel_matches_serial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _tree(tmp_path / "src", modules=12)
    want = _uncached_build(root, monkeypatch)
    monkeypatch.setattr(prefetching, "MIN_PARALLEL_FILES", 2)
    monkeypatch.setattr(prefetching, "MIN_PARALLEL_BYTES", 1)
    assert prefetching.prefetch(root, options=Options(), workers=2) == 25  # 12 modules of 2 files, root
    prefetching.finish()
    cache = tmp_path / "cache"
    assert len(_files(cache / "modules")) == 13  # one entry per module
    assert len(_files(cache / "parse")) == 1  # whole modules computed in parallel store no per-file entry
    assert prefetching.prefetch(root, options=Options(), workers=2) == 0  # everything cached now
    monkeypatch.setattr(parse_cache, "parse_file", _boom)
    monkeypatch.setattr(merge, "_Merger", _boom)
    assert _build(root, options=Options())[0].files == want


def test_prefetch_follows_each_local_call_to_a_directory_once_by_its_real_path(tmp_path: Path) -> None:
    """The next level of prefetch: every local source that is a directory, once whatever the path
    or link it is called through, never a file, a dangling link or a missing directory."""
    tree = tmp_path / "tree"
    (tree / "a" / "sub").mkdir(parents=True)
    (tree / "b").mkdir()
    (tree / "f").write_text("x")
    (tree / "link").symlink_to(tree / "a")
    (tree / "to-file").symlink_to(tree / "f")
    (tree / "dangling").symlink_to(tree / "nowhere")
    calls = ("./a", "./link", "./b", "./a/../b", "./f", "./to-file", "./dangling", "./missing", "./a/sub")
    seen = {(tree / "root").resolve()}
    level = prefetching._next_level([(tree, (*calls, "registry/x/y", "../tree/link/sub"))], seen)
    assert level == [tree / "a", tree / "a" / "sub", tree / "b"]  # sorted; "./link" is "./a"
    assert seen == {(tree / "root").resolve(), *(p.resolve() for p in level)}
    # Called from inside a link: its own path is kept, the real one is seen.
    seen = set()
    assert prefetching._next_level([(tree / "link", ("./sub", "../a/sub", "../b"))], seen) == [
        tree / "b",
        tree / "link" / "sub",
    ]
    assert seen == {(tree / "a" / "sub").resolve(), (tree / "b").resolve()}


@pytest.mark.parametrize("workers", [1, 2])
def test_a_cold_prefetch_reads_each_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    # Each file is read once, by the process that keys and computes its module: neither read
    # first here to be keyed and again in a helper (workers=2), nor keyed and read again here.
    from flatten.shell import memo
    from flatten.stages import load

    root = _tree(tmp_path / "src", modules=12)
    want = _uncached_build(root, monkeypatch)
    monkeypatch.setattr(prefetching, "MIN_PARALLEL_FILES", 2)
    monkeypatch.setattr(prefetching, "MIN_PARALLEL_BYTES", 1)
    log = tmp_path / "reads.log"
    real = load.read_config

    def logged(path: Path, root: Path) -> bytes:
        with open(log, "a", encoding="utf-8") as f:  # one short append per read, from any process
            f.write(f"{os.getpid()} {path}\n")
        return real(path, root)

    monkeypatch.setattr(load, "read_config", logged)
    monkeypatch.setattr(memo, "read_config", logged)
    assert prefetching.prefetch(root, options=Options(), workers=workers) == 25
    reads = [line.split(" ", 1) for line in log.read_text(encoding="utf-8").splitlines()]
    paths = [path for _, path in reads]
    assert sorted(paths) == sorted({str(p) for p in root.rglob("*.tf")})  # every file, once
    if workers == 2:  # the helper read (and computed) a share of them
        assert len({pid for pid, _ in reads}) == 2
    log.unlink()
    try:
        assert _build(root, options=Options())[0].files == want
        assert not log.exists()  # the build reads nothing again: prefetch keyed every module
    finally:
        prefetching.finish()


def test_a_parallel_prefetch_over_a_partly_cached_tree_computes_only_what_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Past the first few modules missing from the cache, a level is read and keyed by whichever
    # process computes it: the entries the cache has are found there, not computed again.
    root = _tree(tmp_path / "src", modules=12)
    monkeypatch.setattr(prefetching, "MIN_PARALLEL_FILES", 2)
    monkeypatch.setattr(prefetching, "MIN_PARALLEL_BYTES", 1)
    assert prefetching.prefetch(root, options=Options(), workers=2) == 25
    prefetching.finish()
    build_cache.forget_prefetched()
    for i in (0, 5, 11):  # the first, one handed over, the last
        (root / f"modules/m{i}/main.tf").write_text(f'variable "v" {{\n  default = {i + 100}\n}}\n')
    want = _uncached_build(root, monkeypatch)
    assert prefetching.prefetch(root, options=Options(), workers=2) == 6  # 3 modules of 2 files
    prefetching.finish()
    monkeypatch.setattr(parse_cache, "parse_file", _boom)
    monkeypatch.setattr(merge, "_Merger", _boom)
    assert _build(root, options=Options())[0].files == want


def test_a_prefetch_helper_that_dies_leaves_its_modules_to_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "src", modules=12)
    want = _uncached_build(root, monkeypatch)
    monkeypatch.setattr(prefetching, "MIN_PARALLEL_FILES", 2)
    monkeypatch.setattr(prefetching, "MIN_PARALLEL_BYTES", 1)
    here, real = os.getpid(), prefetching._work_modules

    def dying(jobs: list[object], *rest: object) -> object:
        if os.getpid() != here:  # a helper: killed with the modules it took
            os._exit(1)
        return real(jobs, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(prefetching, "_work_modules", dying)
    prefetching.prefetch(root, options=Options(), workers=3)
    assert len(build_cache.MEMO) <= 13
    prefetching.finish()
    assert _build(root, options=Options())[0].files == want


@pytest.mark.parametrize("provenance", [False, True])
def test_prefetch_workers_emit_the_modules_that_call_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provenance: bool
) -> None:
    from flatten.stages import layout

    root = _tree(tmp_path / "src", modules=12)
    options = Options(provenance=provenance)
    want = _uncached_build(root, monkeypatch, provenance=provenance)
    monkeypatch.setattr(prefetching, "MIN_PARALLEL_FILES", 2)
    monkeypatch.setattr(prefetching, "MIN_PARALLEL_BYTES", 1)
    prefetching.prefetch(root, options=options, workers=2)
    assert len(build_cache.EMITTED) == 12  # every module but the root, which calls them
    rendered: list[str] = []
    real = layout.module_bytes

    def counting(module: Module, *, provenance: bool) -> bytes:
        rendered.append(module.directory)
        return real(module, provenance=provenance)

    monkeypatch.setattr(layout, "module_bytes", counting)
    assert _build(root, options=options)[0].files == want
    assert rendered == ["."] and not build_cache.EMITTED  # the workers' bytes, each taken once
    prefetching.finish()
    assert len(_files(tmp_path / "cache" / "emit")) == 13  # and stored for the next build


def test_a_prefetch_that_hands_over_writes_its_entries_after_the_hand_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A forked prefetch hands the build everything it computed before it writes any of it to the
    cache (``hand_over``): the build goes on while the child writes. What it writes then is every
    module's entry, output bytes and part of the checks, as an in-process prefetch writes them."""
    root = _tree(tmp_path / "src", modules=12)
    cache = tmp_path / "cache"
    monkeypatch.setattr(prefetching, "MIN_PARALLEL_FILES", 2)
    monkeypatch.setattr(prefetching, "MIN_PARALLEL_BYTES", 1)
    prefetching.prefetch(root, options=Options(), workers=2, hand_over=True)
    build_cache.finish()  # nothing is queued yet: nothing to wait for
    assert (len(build_cache.EMITTED), len(build_cache.CHECKED)) == (12, 12)  # for the build
    assert len(_files(cache / "modules")) == 1  # the root, computed alone before the helpers
    assert not _files(cache / "emit") and not _files(cache / "checks")
    exported = io.BytesIO()
    build_cache.export_prefetched(exported)
    prefetching.finish()
    assert len(_files(cache / "modules")) == 13
    assert (len(_files(cache / "emit")), len(_files(cache / "checks"))) == (12, 12)
    _reset(monkeypatch)  # a new process: what the build takes in is exactly what was exported
    exported.seek(0)
    build_cache.import_prefetched(exported)
    assert (len(build_cache.EMITTED), len(build_cache.CHECKED), len(build_cache.MEMO)) == (12, 12, 12)


def test_cached_rebuild_after_an_edit_equals_an_uncached_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "src")
    assert _build(root, options=Options())[0].files == _uncached_build(root, monkeypatch)
    _reset(monkeypatch)
    edited = root / "modules" / "m3" / "main.tf"
    edited.write_text(edited.read_text() + 'output "o" {\n  value = var.v\n}\n')
    merged: list[str] = []
    real = merge.merge_module

    def counting(files: list, *, directory: str, options: Options) -> object:  # type: ignore[type-arg]
        merged.append(directory)  # the memo merges only what it does not hold
        return real(files, directory=directory, options=options)

    monkeypatch.setattr("flatten.stages.load.merge_module", counting)
    for prefetch in (False, True):
        if prefetch:
            edited.write_text(edited.read_text() + "# again\n")
            prefetching.prefetch(root, options=Options())
        merged.clear()
        got = _build(root, options=Options())[0].files
        assert merged == ([] if prefetch else ["modules/m3"])  # prefetch merged it already
        assert got == _uncached_build(root, monkeypatch)
        assert b'"o"' in got["modules/m3/main.tf.json"]
        _reset(monkeypatch)


def test_cached_build_equals_uncached_for_every_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "src", modules=3)
    for options in ({"provenance": True}, {"dialect": Dialect.OPENTOFU}, {}, {"provenance": True}):
        want = _uncached_build(root, monkeypatch, **options)
        for _ in range(2):  # computed, then from the cache
            assert _build(root, options=Options(**options))[0].files == want  # type: ignore[arg-type]
            _reset(monkeypatch)


def test_module_key_covers_content_names_options_and_version(monkeypatch: pytest.MonkeyPatch) -> None:
    files = [("m/a.tf", "native", False, b"a = 1\n"), ("m/o_override.tf", "native", True, b"")]
    base = build_cache.module_key("m", files, Options())
    assert base == build_cache.module_key("m", list(files), Options())
    assert base != build_cache.module_key("n", files, Options())
    assert base != build_cache.module_key("m", [("m/a.tf", "native", False, b"a = 2\n"), files[1]], Options())
    assert base != build_cache.module_key("m", [("m/b.tf", "native", False, b"a = 1\n"), files[1]], Options())
    assert base != build_cache.module_key("m", [("m/a.tf", "native", True, b"a = 1\n"), files[1]], Options())
    assert base != build_cache.module_key("m", files[:1], Options())
    assert base != build_cache.module_key("m", files, Options(provenance=True))
    assert base != build_cache.module_key("m", files, Options(dialect=Dialect.OPENTOFU))
    monkeypatch.setitem(build_cache._STATE, "version", "another flatten")
    assert base != build_cache.module_key("m", files, Options())


def test_module_entry_corrupt_or_foreign_is_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _tree(tmp_path / "src", modules=1)
    want = _build(root, options=Options())[0].files
    prefetching.finish()
    entries = _files(tmp_path / "cache" / "modules")
    assert len(entries) == 2
    good = {p: p.read_bytes() for p in entries}
    for junk in (b"", b"garbage", b"flatten-module-1\n\x00\x00", good[entries[0]][:-7], good[entries[1]]):
        for p in entries:
            p.write_bytes(junk)
        _reset(monkeypatch)
        assert _build(root, options=Options())[0].files == want
    prefetching.finish()
    for p in entries:  # rewritten, holding what they held
        assert build_cache.decode(p.read_bytes(), p.name) == build_cache.decode(good[p], p.name) is not None


def test_memo_returns_the_stored_module_only_for_the_same_files(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src", modules=1)
    directory = root / "modules" / "m0"
    want, key = load_module(directory, root=root, options=Options(), memo=DiskMemo())
    prefetching.finish()
    assert isinstance(key, MemoKey) and key.module is want.module
    got, again = load_module(directory, root=root, options=Options(), memo=DiskMemo())  # from the cache
    assert got == want and again is not None and again.key == key.key and again.module is got.module
    assert got.module is not want.module  # decoded from the entry, not computed
    (directory / "main.tf").write_text('variable "v" {\n  default = 3\n}\n')
    edited, other = load_module(directory, root=root, options=Options(), memo=DiskMemo())
    assert other is not None and other.key != key.key
    assert edited == load_module(directory, root=root, options=Options())[0]  # what NO_MEMO computes
    assert edited.module != want.module


def test_module_cache_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLATTEN_MODULE_CACHE", "off")
    root = _tree(tmp_path / "src", modules=2)
    _build(root, options=Options())
    prefetching.finish()
    assert not _files(tmp_path / "cache" / "modules") and _files(tmp_path / "cache" / "parse")


def test_fast_constructors_build_the_same_objects() -> None:
    a, b = make_pos(1, 2, 3), Pos(1, 2, 3)
    assert a == b and hash(a) == hash(b) and repr(a) == repr(b) and not (a < b)
    r = make_range("f.tf", a, make_pos(2, 1, 9))
    assert r == Range("f.tf", b, Pos(2, 1, 9)) and str(r) == "f.tf:1,2-2,1"
    e = make_expr("${x}", r)
    attr = make_attribute("a", e, r)
    body = make_body((attr,), r)
    block = make_block("t", ("l",), body, r, (r,), ())
    assert block == Block("t", ("l",), Body((Attribute("a", Expr("${x}", r), r),), r), r, (r,))
    with pytest.raises(AttributeError):
        a.line = 5  # type: ignore[misc]
    import pickle

    assert pickle.loads(build_cache.dumps(block)) == block


def test_a_scan_record_pickles_through_the_fast_constructors(monkeypatch: pytest.MonkeyPatch) -> None:
    # A module's scan record travels with it (module cache, prefetch's helpers): its References
    # and Calls are rebuilt by make_reference/make_call, equal to constructed ones, and never
    # through the dataclasses' Python-level __setstate__ (issue 41: 0.1 s of a cold build).
    import dataclasses
    import pickle

    from flatten.lang.model import Call, Reference, make_call, make_reference
    from flatten.syntax.references import template_calls

    ref = Reference("var", (("attr", "x"), ("index", 0)), 2, 10, (5, 7, 10))
    call = Call("merge", 2, 20, 7)
    assert make_reference("var", (("attr", "x"), ("index", 0)), 2, 10, (5, 7, 10)) == ref
    assert make_call("merge", 2, 20, 7) == call
    with pytest.raises(AttributeError):
        ref.root = "local"  # type: ignore[misc]
    text = "${merge(var.tags, { a = local.b[0] })}"
    record = {text: template_calls(text)}

    def refused(self: object, state: object) -> None:
        raise AssertionError("unpickled through __setstate__")

    for cls in (Reference, Call):
        monkeypatch.setattr(cls, "__setstate__", refused, raising=False)
    module = Module(".", (), (), scans=record)
    back = pickle.loads(build_cache.dumps(module))
    got, want = back.scans[text], record[text]
    assert got is not None and want is not None and got == want
    assert [dataclasses.astuple(r) for r in got[0]] == [dataclasses.astuple(r) for r in want[0]]
    assert [r.root for r in got[0]] == ["var", "local"] and [c.name for c in got[1]] == ["merge"]


def test_a_module_entry_pickles_its_scan_record_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The rest of an entry is pickled by a pickler whose persistent_id is Python called for each
    # object: the scan record (every template's References and Calls) is pickled apart, one such
    # call in all, and decodes equal to the record that was stored (issue 41, ninth round).
    root = tmp_path / "m"
    root.mkdir()
    (root / "main.tf").write_text(
        "".join(
            f'resource "terraform_data" "r{i}" {{\n'
            f'  input = "${{var.name}}-{i}-${{lower(local.x[{i}])}}"\n}}\n'
            for i in range(60)
        )
        + 'variable "name" {}\nlocals {\n  x = ["a"]\n}\n'
    )
    captured: list[tuple[str, object]] = []
    load_module(root, root=root, options=Options(), memo=DiskMemo(captured=captured))  # type: ignore[arg-type]
    key, entry = captured[-1]
    assert isinstance(entry, build_cache.ModuleEntry)
    assert len(entry.module.scans) >= 60
    calls = [0]
    real = build_cache._Skeleton.persistent_id

    def counting(self: build_cache._Skeleton, obj: object) -> int | None:
        calls[0] += 1
        return real(self, obj)

    monkeypatch.setattr(build_cache._Skeleton, "persistent_id", counting)
    _, data = build_cache.encode(key, entry)
    # Each of the 60 texts alone is more than three objects (the string, its References, Calls).
    assert calls[0] < 100, calls[0]
    back = build_cache.decode(data, key)
    assert back is not None
    assert back.module.scans == entry.module.scans
    assert back.module == entry.module


def test_entry_bodies_decode_on_first_use_and_equal_the_stored_ones(tmp_path: Path) -> None:
    import copy
    import dataclasses
    import pickle

    root = _tree(tmp_path / "src", modules=1)
    directory = root / "modules" / "m0"
    files, _ = load_dir(directory, root=root, options=Options())
    want, _ = merge.merge_module(files, directory="modules/m0", options=Options())
    entry = build_cache.ModuleEntry("modules/m0", tuple(files), (), "modules/m0", want, ())
    _, data = build_cache.encode("k", entry)

    def fresh() -> Module:
        found = build_cache.decode(data, "k")
        assert found is not None
        return found.module

    got = fresh()
    resource = next(got.blocks_of("resource"))
    assert isinstance(resource.body, build_cache.LazyBody)
    # Asking for what a body does not hold answers from the stored names, without decoding.
    assert resource.body.attribute("provider") is None and not list(resource.body.blocks_of("lifecycle"))
    assert resource.body.stored() is not None
    # Re-encoding an untouched entry reuses the stored bodies without decoding them.
    again = build_cache.encode("k", build_cache.ModuleEntry("modules/m0", (), (), "modules/m0", got, ()))[1]
    assert resource.body.stored() is not None
    decoded = build_cache.decode(again, "k")
    assert decoded is not None and decoded.module == want
    assert got == want and want == got and repr(got) == repr(want)
    assert resource.body.stored() is None  # compared: decoded now
    assert resource.body.attribute("triggers") == next(want.blocks_of("resource")).body.attribute("triggers")
    # Any other pickler, copy or replace() sees an ordinary body with the same items.
    other = fresh()
    plain = pickle.loads(pickle.dumps(other))
    assert type(next(plain.blocks_of("resource")).body) is Body and plain == want
    assert copy.deepcopy(fresh()) == want
    replaced = dataclasses.replace(next(fresh().blocks_of("resource")).body, items=())
    assert replaced.items == () and replaced.attribute("triggers") is None


def test_concurrent_builds_share_the_caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _tree(tmp_path / "src", modules=10)
    want = _uncached_build(root, monkeypatch)
    env = {**os.environ, "FLATTEN_CACHE_DIR": str(tmp_path / "shared")}

    def start(i: int) -> subprocess.Popen[str]:
        argv = [sys.executable, "-m", "flatten", "build", str(root), "--out", str(tmp_path / f"out{i}")]
        return subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True)

    for rounds in range(3):
        if rounds == 2:  # an edit between rounds: some modules from the cache, one computed again
            (root / "modules" / "m4" / "main.tf").write_text('variable "v" {\n  default = 44\n}\n')
            want = _uncached_build(root, monkeypatch)
        procs = [start(i) for i in range(4)]
        for proc in procs:
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
        for i in range(4):
            out = tmp_path / f"out{i}"
            got = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
            assert got == want
    assert not [p for p in (tmp_path / "shared").rglob("*") if p.name.endswith(".tmp")]


def test_prefetch_never_raises(tmp_path: Path) -> None:
    assert prefetching.prefetch(tmp_path / "missing", options=Options()) == 0


def _fork_or_skip() -> None:
    prefetching.finish()
    if threading.active_count() > 1:
        pytest.skip("other threads are running in the test process: a forked child could deadlock")


def test_forked_prefetch_hands_its_results_to_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "src", modules=12)
    want = _uncached_build(root, monkeypatch)
    _fork_or_skip()
    take = prefetching.prefetch_forked(root, options=Options())
    assert take is not None
    take()
    # Every module: its entry written into the cache as it was encoded, before it was handed over.
    assert len(build_cache.PREREAD) == 13 and len(_files(tmp_path / "cache" / "modules")) == 13
    monkeypatch.setattr(parse_cache, "parse_file", _boom)
    monkeypatch.setattr(merge, "_Merger", _boom)
    assert _build(root, options=Options())[0].files == want  # nothing parsed or merged again
    prefetching.finish()  # waits for the child, which writes its entries after handing them over
    assert not prefetching._CHILDREN and len(_files(tmp_path / "cache" / "modules")) == 13
    # Everything cached now: entries the child only read are not sent; the build reads them.
    _reset(monkeypatch)
    take = prefetching.prefetch_forked(root, options=Options())
    assert take is not None
    take()
    assert not build_cache.MEMO and len(build_cache.PREREAD) == 13
    assert _build(root, options=Options())[0].files == want
    prefetching.finish()


def test_forked_prefetch_never_taken_does_not_hang_the_exit(tmp_path: Path) -> None:
    # A build stopped before it took what the child prefetched (Ctrl-C while importing): the
    # child is blocked writing more than a pipe holds, and finish() must still return.
    root = _tree(tmp_path / "src", modules=60)
    _fork_or_skip()
    assert prefetching.prefetch_forked(root, options=Options()) is not None
    pid = prefetching._CHILDREN[-1][0]
    time.sleep(0.5)  # the child computes and starts writing meanwhile
    done = threading.Thread(target=prefetching.finish, daemon=True)
    done.start()
    done.join(timeout=30)
    if done.is_alive():
        os.kill(pid, 9)
    assert not done.is_alive(), "finish() waited forever for a child blocked on its pipe"


def test_forked_prefetch_that_fails_leaves_the_work_to_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "src", modules=3)
    want = _uncached_build(root, monkeypatch)
    _fork_or_skip()

    def crash(*args: object, **kwargs: object) -> int:
        raise MemoryError("in the child")

    monkeypatch.setattr(prefetching, "prefetch", crash)  # seen by the forked child only
    take = prefetching.prefetch_forked(root, options=Options())
    assert take is not None
    take()
    assert not build_cache.MEMO
    assert _build(root, options=Options())[0].files == want
    prefetching.finish()


def test_an_early_prefetch_is_taken_over_by_the_build_it_was_started_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "src", modules=12)
    want = _uncached_build(root, monkeypatch)
    _fork_or_skip()
    before = time.time_ns()
    prefetching.prefetch_early(root, options=Options())
    [(pid, _)] = prefetching._CHILDREN
    started = prefetching.early_start(root, Options())
    assert started is not None and before <= started <= time.time_ns()
    assert prefetching.early_start(root, Options(provenance=True)) is None
    take = prefetching.prefetch_forked(root, options=Options())
    assert take is not None and [c for c, _ in prefetching._CHILDREN] == [pid]  # no second child
    take()
    monkeypatch.setattr(parse_cache, "parse_file", _boom)
    monkeypatch.setattr(merge, "_Merger", _boom)
    assert _build(root, options=Options())[0].files == want  # nothing parsed or merged again
    prefetching.finish()


def test_an_early_prefetch_for_other_options_is_ended_unused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "src", modules=60)
    want = _uncached_build(root, monkeypatch, provenance=True)
    _fork_or_skip()
    prefetching.prefetch_early(root, options=Options())
    [(early, _)] = prefetching._CHILDREN
    take = prefetching.prefetch_forked(root, options=Options(provenance=True))
    assert take is not None
    assert [c for c, _ in prefetching._CHILDREN] != [early]  # its own child; the early one reaped
    with pytest.raises(ChildProcessError):
        os.waitpid(early, os.WNOHANG)
    take()
    assert _build(root, options=Options(provenance=True))[0].files == want
    prefetching.finish()


def test_an_early_prefetch_nobody_takes_is_ended_at_the_exit(tmp_path: Path) -> None:
    # The command line failed after the child was forked: the exit must not wait for the child to
    # compute the whole tree.
    root = _tree(tmp_path / "src", modules=60)
    _fork_or_skip()
    prefetching.prefetch_early(root, options=Options())
    [(pid, _)] = prefetching._CHILDREN
    done = threading.Thread(target=prefetching.finish, daemon=True)
    done.start()
    done.join(timeout=30)
    if done.is_alive():
        os.kill(pid, 9)
    assert not done.is_alive() and not prefetching._CHILDREN
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        (["build", "live", "--out", "dist"], ("live", "dist")),
        (["build", "--out", "dist", "live"], ("live", "dist")),
        (["build", "-o", "dist"], (".", "dist")),
        (["build", "--out=dist", "live"], ("live", "dist")),
        (["build", "live"], None),  # typer refuses it: no --out
        (["build", "live", "--out", "dist", "--provenance"], None),  # an option: not the defaults
        (["build", "a", "b", "--out", "dist"], None),  # several roots
        (["build", "live", "--out", "a", "--out", "b"], None),
        (["build", "--", "live", "--out", "dist"], None),
        (["build", "", "--out", "dist"], None),
    ],
)
def test_only_a_plain_build_is_known_before_typer_parses_it(
    argv: list[str], want: tuple[str, str] | None
) -> None:
    assert process.plain_build(argv) == want


def test_a_plain_build_forks_its_prefetch_early_only_while_the_cache_holds_no_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "src", modules=2)
    started: list[tuple[Path, Options]] = []
    monkeypatch.setattr(
        prefetching, "prefetch_early", lambda root, *, options, progress=None: started.append((root, options))
    )
    argv = ["build", str(root), "--out", str(tmp_path / "out")]
    process._prefetch_early(argv, None)
    assert started == [(root.resolve(), Options())]
    process._prefetch_early(["build", str(root), "--out", str(tmp_path / "out"), "--provenance"], None)
    monkeypatch.setenv("FLATTEN_MODULE_CACHE", "off")
    _reset(monkeypatch)  # as a new process with that environment starts
    process._prefetch_early(argv, None)
    monkeypatch.delenv("FLATTEN_MODULE_CACHE")
    _reset(monkeypatch)
    assert len(started) == 1
    # Once a build is recorded, a build may replay or rebuild in part: the usual order stands.
    calls: list[int] = []
    age_tree(root)  # else no record is kept (test_build_record_refused_for_fresh_inputs)
    assert run_cli(argv, calls) == 0
    cache = parse_cache.default_cache()
    assert cache is not None and calls == [1] and any((cache.directory.parent / "builds").iterdir())
    process._prefetch_early(argv, None)
    assert len(started) == 1


def test_build_record_replays_only_when_nothing_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _tree(tmp_path / "src")
    age_tree(root)
    out = tmp_path / "out"
    argv = ["build", str(root), "--out", str(out)]
    calls: list[int] = []
    assert run_cli(argv, calls) == 0
    first = capsys.readouterr().err
    assert calls == [1] and "wrote" in first
    assert run_cli(argv, calls) == 0
    assert calls == [1] and capsys.readouterr().err == first  # replayed, same messages
    (root / "modules" / "m1" / "main.tf").write_text('variable "v" {\n  default = 2\n}\n')
    assert run_cli(argv, calls) == 0
    assert calls == [1, 1]
    age_tree(root)
    assert run_cli(argv, calls) == 0
    assert run_cli(argv, calls) == 0
    assert calls == [1, 1, 1]
    (out / "main.tf.json").write_text("{}")  # the output was touched: build again
    assert run_cli(argv, calls) == 0
    assert calls == [1, 1, 1, 1]
    (root / "notes.txt").write_text("copied along")  # a new file beside a module
    age_tree(root)
    assert run_cli(argv, calls) == 0
    assert calls == [1, 1, 1, 1, 1] and (out / "notes.txt").exists()


def test_build_record_refused_for_fresh_inputs(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src")  # written just now: it may still be changing
    out = tmp_path / "out"
    calls: list[int] = []
    for _ in range(2):
        assert run_cli(["build", str(root), "--out", str(out)], calls) == 0
    assert calls == [1, 1]


def _request(argv: list[str]) -> cli.BuildRequest | None:
    """Return the build request typer makes of ``argv`` (None when it runs no build)."""
    seen: list[cli.BuildRequest] = []

    def runner(request: cli.BuildRequest) -> int:
        seen.append(request)
        return 0

    CliRunner().invoke(cli.app, argv, obj=runner)
    return seen[0] if seen else None


def test_the_command_line_is_parsed_once_into_the_request_prefetch_and_records_use() -> None:
    assert _request(["graph", "."]) is None and _request(["build", ".", "-o", "o", "--unknown"]) is None
    request = _request(["build", "r", "-o", "o", "--dialect=opentofu"])
    assert request is not None and (request.root, request.out) == (Path("r"), Path("o"))
    # Prefetch computes under the build's own options, so the build finds what it computed.
    assert request.options == Options(Dialect.OPENTOFU) and replay.replayable(request)
    found = _request(["build", "r", "-o", "o", "--provenance", "--explicit-providers"])
    assert found is not None and found.options == Options(provenance=True, explicit_providers=True)
    found = _request(["build", "r", "-o", "o", "--provenance", "--no-provenance"])
    assert found is not None and found.options == Options()
    # A record replays stderr only, of a build that writes its output, with no network or inlining.
    for extra in (["--check"], ["--diagnostics-json"], ["--format", "json"], ["--offline"], ["--inline"]):
        found = _request(["build", "r", "-o", "o", *extra])
        assert found is not None and not replay.replayable(found), extra


def test_the_record_key_covers_the_request_and_the_environment_a_build_reads(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def key(*argv: str) -> Path:
        request = _request(["build", *argv])
        assert request is not None
        return replay.record_path(tmp_path, request, Path("/r"), Path("/o"))

    base = key("r", "-o", "o")
    assert key("r", "--out", "o") == base  # the same request, however it was spelt
    assert key("r", "-o", "/o") != base  # "wrote ... to /o": another message to replay
    assert key("r", "-o", "o", "--provenance") != base
    monkeypatch.setenv("GITHUB_ACTIONS", "true")  # annotations in the text diagnostics
    assert key("r", "-o", "o") != base
    monkeypatch.delenv("GITHUB_ACTIONS")
    monkeypatch.setenv("FLATTEN_CACHE_KEY", "secret")  # a secret: never in a record's name
    monkeypatch.setenv("UNRELATED", "1")
    assert key("r", "-o", "o") == base


def test_entry_point_end_to_end(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src")
    age_tree(root)
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


def test_emitted_bytes_are_cached_only_for_modules_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    from flatten.stages.emit import dumps, module_json

    root = _tree(tmp_path / "src", modules=2)
    (root / "locals.tf").write_text("locals {\n  a = 1\n}\n")
    computed: list[int] = []

    def emit(module: Module) -> Callable[[], bytes]:
        def compute() -> bytes:
            computed.append(1)
            return dumps(module_json(module)).encode()

        return compute

    def load() -> tuple[Module, MemoKey | None]:
        loaded, key = load_module(root, root=root, options=Options(), memo=DiskMemo())
        return loaded.module, key

    memo = DiskMemo()
    plain = load_module(root, root=root, options=Options())[0].module  # NO_MEMO: no key
    assert memo.emitted(None, plain, plain, False, emit(plain)) == emit(plain)()
    computed.clear()
    for _ in range(2):
        _reset(monkeypatch)
        module, key = load()
        want = dumps(module_json(module)).encode()
        assert memo.emitted(key, module, module, False, emit(module)) == want
        prefetching.finish()
    assert computed == [1]  # the second time from the cache
    # A key names the very module it came with: for an equal module from elsewhere it computes.
    assert memo.emitted(key, plain, plain, False, emit(plain)) == want and computed == [1, 1]
    calls = [replace(b, labels=("renamed",)) if b.type == "module" else b for b in module.blocks]
    other = replace(module, blocks=tuple(calls))
    assert memo.emitted(key, module, other, False, emit(other)) == emit(other)()
    assert memo.emitted(key, module, module, True, emit(module)) == want
    assert len(computed) == 5  # another call block, provenance: other keys
    changed = replace(module, blocks=tuple(replace(b, labels=()) if b.type == "locals" else b for b in calls))
    computed.clear()
    for _ in range(2):
        memo.emitted(key, module, changed, False, emit(changed))
    assert computed == [1, 1]  # a block other than a module call differs: never cached


def test_a_rewritten_call_is_keyed_by_what_differs_from_the_call_as_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The emit key describes a rewritten ``module`` block by the items it shares with the
    loaded one (their places) and the others in full: equal rewrites share the bytes, any
    other difference (a source, a dropped or changed argument, a label) computes them."""
    from dataclasses import replace

    from flatten.stages.emit import dumps, module_json

    root = _tree(tmp_path / "src", modules=2)
    (root / "main.tf").write_text('module "m0" {\n  source = "./modules/m0"\n  v      = 1\n}\n')
    loaded, key = load_module(root, root=root, options=Options(), memo=DiskMemo())
    module = loaded.module
    (call,) = [b for b in module.blocks if b.type == "module"]
    source, argument = call.body.items

    def rewritten(*items: Attribute | Block, labels: tuple[str, ...] = call.labels) -> Module:
        block = replace(call, labels=labels, body=Body(items, call.body.range))
        return replace(module, blocks=tuple(block if b is call else b for b in module.blocks))

    def moved(to: str) -> Attribute:
        return replace(source, expr=Expr(to, source.expr.range))

    changes = {
        "same items": rewritten(source, argument),
        "source": rewritten(moved("./m0"), argument),
        "other source": rewritten(moved("./elsewhere"), argument),
        "dropped": rewritten(moved("./m0")),
        "changed": rewritten(moved("./m0"), replace(argument, expr=Expr(2, argument.expr.range))),
        "label": rewritten(source, argument, labels=("renamed",)),
    }
    described = {
        name: build_cache.call_change(call, next(b for b in m.blocks if b.type == "module"))
        for name, m in changes.items()
    }
    assert described["same items"] == (0, 1)
    again = rewritten(moved("./m0"), argument)  # an equal rewrite made again: the same key
    assert (
        build_cache.call_change(call, next(b for b in again.blocks if b.type == "module"))
        == described["source"]
    )
    assert described["label"] == repr(next(b for b in changes["label"].blocks if b.type == "module"))
    assert len(set(map(repr, described.values()))) == len(described)
    computed: list[str] = []
    memo = DiskMemo()
    for i, (name, output) in enumerate([*changes.items(), ("source", rewritten(moved("./m0"), argument))]):
        if i == len(changes):
            prefetching.finish()  # the entries written
        want = dumps(module_json(output)).encode()

        def compute(output: Module = output, name: str = name) -> bytes:
            computed.append(name)
            return dumps(module_json(output)).encode()

        assert memo.emitted(key, module, output, False, compute) == want
    assert computed == list(changes)  # each computed once; the same rewrite again from the cache
