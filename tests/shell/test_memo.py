"""The seam between the stages and the shell's caches (flatten/stages/memo.py, flatten/shell/memo.py).

A build is a pure function of its inputs: with the disk-backed memo (cold, then answered from
the caches, then after prefetch) it must equal the build without one, files, diagnostics and
module graph alike.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.paths import REPO

from flatten.build import BuildResult, build
from flatten.lang.diagnostics import Diagnostics
from flatten.lang.options import Dialect, Options
from flatten.shell import build_cache, parse_cache
from flatten.shell import prefetch as prefetching
from flatten.shell.memo import DiskMemo, keep_grammar_cache
from flatten.stages import merge
from flatten.stages.memo import NO_MEMO, Memo

TREES = [
    "samples/network",
    "samples/web-service",
    "samples/multi-region",
    "samples/legacy",
    "samples/remote",  # a remote module not installed: errors, the same ones
    "tests/data/merge/dup-terraform-wording",
    "tests/data/merge/encryption-merge",
    "tests/data/providers/inherit-and-pass",
    "tests/data/providers/override-config",
    "tests/data/decode/json-files",
    "tests/data/decode/module-calls",
]


def _forget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget the caches' in-process state, as a new process would start (their files stay)."""
    prefetching.finish()
    monkeypatch.setattr(parse_cache, "_CACHE", {})
    monkeypatch.setattr(parse_cache, "_MEMO", {})
    monkeypatch.setattr(build_cache, "_STATE", {})
    monkeypatch.setattr(build_cache, "MEMO", {})
    monkeypatch.setattr(build_cache, "PREREAD", {})
    monkeypatch.setattr(build_cache, "EMITTED", {})
    monkeypatch.setattr(build_cache, "READ", set())


def _result(root: Path, options: Options, memo: Memo) -> tuple[dict[str, bytes], Diagnostics, object]:
    result, diags = build(root, options=options, memo=memo)
    return result.files, diags, _graph(result)


def _graph(result: BuildResult) -> object:
    if result.graph is None:
        return None
    return [(n.address, n.module, n.directory, n.calls) for n in result.graph.walk()]


@pytest.mark.parametrize("options", [Options(), Options(dialect=Dialect.OPENTOFU, provenance=True)])
@pytest.mark.parametrize("name", TREES)
def test_a_build_with_the_disk_memo_equals_one_without(
    name: str, options: Options, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "tree"
    shutil.copytree(REPO / name, root, symlinks=True)
    _forget(monkeypatch)
    want = _result(root, options, NO_MEMO)
    assert want[0] or want[1].has_errors  # a tree that builds, or the errors it gives
    cold = _result(root, options, DiskMemo())  # computed, and stored
    _forget(monkeypatch)
    assert list(Path(os.environ["FLATTEN_CACHE_DIR"]).glob("modules/*")), "nothing was stored"
    # Answered from the caches: nothing is parsed or merged again.
    with monkeypatch.context() as m:
        m.setattr(parse_cache, "parse_file", _computed)
        m.setattr(merge, "_Merger", _computed)
        warm = _result(root, options, DiskMemo())
        _forget(m)
        prefetching.prefetch(root, options=options)  # as the command line does before building
        assert build_cache.PREREAD  # what the build will take instead of listing and reading
        prefetched = _result(root, options, DiskMemo())
    _forget(monkeypatch)
    assert cold == want
    assert warm == want
    assert prefetched == want


def _computed(*args: object, **kwargs: object) -> None:
    raise AssertionError("computed again: the memo had it")


def test_the_memo_sees_an_edit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "tree"
    shutil.copytree(REPO / "samples" / "network", root, symlinks=True)
    before = _result(root, Options(), DiskMemo())
    _forget(monkeypatch)
    edited = next(p for p in sorted(root.rglob("*.tf")) if p.parent != root)
    edited.write_text(edited.read_text() + '\noutput "added_by_test" {\n  value = 1\n}\n')
    after = _result(root, Options(), DiskMemo())
    assert after == _result(root, Options(), NO_MEMO) != before
    assert any(b'"added_by_test"' in data for data in after[0].values())


def test_grammar_cache_moves_out_of_read_only_site_packages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Already imported: moved at once.
    from hcl2 import parser as hcl2_parser

    from flatten.shell import memo

    monkeypatch.setattr(hcl2_parser, "PARSER_FILE", tmp_path / "site" / ".lark_cache.bin")
    monkeypatch.setattr(memo, "_STATE", {})
    monkeypatch.setattr(os, "access", lambda path, mode: False)  # a read-only site-packages
    monkeypatch.setenv("FLATTEN_CACHE_DIR", str(tmp_path / "cache"))
    keep_grammar_cache()
    assert tmp_path / "cache" / "lark" / "hcl2.lark_cache.bin" == hcl2_parser.PARSER_FILE


def test_grammar_cache_moves_when_python_hcl2_is_first_imported(tmp_path: Path) -> None:
    # A fresh process with a read-only copy of python-hcl2 that has no grammar cache: the check
    # imports nothing, and the parser writes its cache in flatten's cache directory once used.
    import hcl2

    site = tmp_path / "site"
    shutil.copytree(
        Path(hcl2.__file__).parent, site / "hcl2", ignore=shutil.ignore_patterns(".lark_cache.bin")
    )
    script = textwrap.dedent(
        f"""
        import os, sys
        sys.path.insert(0, {str(site)!r})
        real_access = os.access
        os.access = lambda path, mode: False if "site" in str(path) else real_access(path, mode)
        from flatten.shell.memo import keep_grammar_cache
        keep_grammar_cache()
        assert "hcl2.parser" not in sys.modules and "hcl2" not in sys.modules
        from flatten.syntax.hcl import parse_native
        from flatten.lang.options import Options
        body, diags = parse_native("locals {{\\n  a = !!x\\n}}\\n", "m.tf", options=Options())
        assert not diags, diags
        import hcl2.parser
        assert hcl2.parser.__file__.startswith({str(site)!r}), hcl2.parser.__file__
        print(hcl2.parser.PARSER_FILE)
        """
    )
    env = {**os.environ, "FLATTEN_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    moved = tmp_path / "cache" / "lark" / "hcl2.lark_cache.bin"
    assert proc.stdout.strip() == str(moved)
    assert moved.is_file() and not (site / "hcl2" / ".lark_cache.bin").exists()
