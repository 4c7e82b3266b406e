"""A module's part of the checks kept through the memo (flatten/stages/memo.py ``Memo.checked``).

A module's part of the validate-level checks (what the reference and function checks find in its
blocks, its part of the cycle graph) is a function of ``CheckKey``: the module, its address, its
caller's text (the call block), its children's output names, the dialect and release. A part
taken from the cache must give exactly the diagnostics computing it gives, and an edit of any of
those inputs, even in another module's file, must compute it again.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from support.paths import REPO

from flatten.build import build
from flatten.lang.diagnostics import Diagnostics
from flatten.lang.options import Dialect, Options
from flatten.shell import build_cache, forks, parse_cache
from flatten.shell import prefetch as prefetching
from flatten.shell.memo import DiskMemo
from flatten.stages import check_parts
from flatten.stages.memo import NO_MEMO, Memo


def _forget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget the caches' in-process state, as a new process would start (their files stay)."""
    prefetching.finish()
    build_cache.finish()  # every entry queued for writing is written
    monkeypatch.setattr(parse_cache, "_CACHE", {})
    monkeypatch.setattr(parse_cache, "_MEMO", {})
    monkeypatch.setattr(build_cache, "_STATE", {})
    monkeypatch.setattr(build_cache, "MEMO", {})
    monkeypatch.setattr(build_cache, "PREREAD", {})
    monkeypatch.setattr(build_cache, "EMITTED", {})
    monkeypatch.setattr(build_cache, "READ", set())


def _diags(root: Path, memo: Memo, options: Options | None = None) -> list[tuple[object, ...]]:
    _, diags = build(root, options=options or Options(terraform_version=(1, 15)), memo=memo)
    return _shown(diags)


def _shown(diags: Diagnostics) -> list[tuple[object, ...]]:
    """Everything a diagnostic shows, in order."""
    return [(d.severity, d.summary, d.detail, d.range, d.module, d.context) for d in diags]


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The addresses of the modules whose part of the checks is computed from now on."""
    computed: list[str] = []
    real = check_parts.module_part

    def counting(node, *args):  # type: ignore[no-untyped-def]
        computed.append(node.address)
        return real(node, *args)

    monkeypatch.setattr(check_parts, "module_part", counting)
    return computed


_CHILD = """
variable "x" {
  type = string
}
output "a" {
  value = var.x
}
output "typo" {
  value = lenght(var.x)
}
"""
_ROOT = """
module "child" {
  source = "./child"
  x      = "v"
}
resource "terraform_data" "r" {
  input = var.missing
}
output "o" {
  value = module.child.a
}
"""


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "child").mkdir(parents=True)
    (root / "main.tf").write_text(_ROOT)
    (root / "child" / "main.tf").write_text(_CHILD)
    return root


@pytest.mark.parametrize(
    "name", ["samples/network", "samples/multi-region", "tests/data/providers/inherit-and-pass"]
)
def test_parts_from_the_cache_give_the_same_diagnostics(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "tree"
    shutil.copytree(REPO / name, root, symlinks=True)
    for options in (Options(), Options(dialect=Dialect.OPENTOFU)):
        _forget(monkeypatch)
        want = _diags(root, NO_MEMO, options)
        computed = _counting(monkeypatch)
        assert _diags(root, DiskMemo(), options) == want
        assert computed, "a cold build computes each module's part"
        _forget(monkeypatch)
        computed.clear()
        assert _diags(root, DiskMemo(), options) == want
        assert computed == [], "a warm build takes every part from the cache"


def test_a_part_with_errors_from_the_cache_gives_them_in_the_same_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path)
    want = _diags(root, NO_MEMO)
    assert {s for _, s, *_ in want} >= {"Reference to undeclared input variable", "Call to unknown function"}
    computed = _counting(monkeypatch)
    assert _diags(root, DiskMemo()) == want
    assert computed == ["", "module.child"]
    _forget(monkeypatch)
    computed.clear()
    assert _diags(root, DiskMemo()) == want
    assert computed == []


def test_a_child_output_renamed_computes_the_callers_part_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The root's text does not change: only what it reads of its child (the output names).
    root = _tree(tmp_path)
    (root / "main.tf").write_text(_ROOT.replace("var.missing", '"x"'))
    (root / "child" / "main.tf").write_text(_CHILD.replace("lenght", "length"))
    assert _diags(root, DiskMemo()) == []
    _forget(monkeypatch)
    (root / "child" / "main.tf").write_text(_CHILD.replace("lenght", "length").replace('"a"', '"b"'))
    computed = _counting(monkeypatch)
    got = _diags(root, DiskMemo())
    assert got == _diags(root, NO_MEMO)
    assert [s for _, s, *_ in got] == ["Unsupported attribute"]
    assert "" in computed


def test_a_call_block_edited_computes_the_childs_part_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The child's text does not change: only its call block in the caller, whose argument now
    # reads the child's own output (a cycle through the child's variable).
    root = _tree(tmp_path)
    (root / "main.tf").write_text(_ROOT.replace("var.missing", '"x"'))
    (root / "child" / "main.tf").write_text(_CHILD.replace("lenght", "length"))
    assert _diags(root, DiskMemo()) == []
    _forget(monkeypatch)
    (root / "main.tf").write_text(_ROOT.replace("var.missing", '"x"').replace('"v"', "module.child.a"))
    computed = _counting(monkeypatch)
    got = _diags(root, DiskMemo())
    assert got == _diags(root, NO_MEMO)
    assert got[0][1].startswith("Cycle: ")  # type: ignore[union-attr]
    assert "module.child" in computed


def test_another_release_computes_the_parts_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Terraform 1.9 has no provider functions' namespace and no variable validation nodes.
    root = _tree(tmp_path)
    for release in ((1, 15), (1, 5)):
        _forget(monkeypatch)
        computed = _counting(monkeypatch)
        options = Options(terraform_version=release)
        assert _diags(root, DiskMemo(), options) == _diags(root, NO_MEMO, options)
        assert computed == ["", "module.child"]


def test_parts_computed_in_forked_helpers_give_the_same_diagnostics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Enough modules for the parts the cache lacks to be shared with a forked helper
    # (forks.shared), each helper's parts pickled back: the same errors, in tree order.
    root = tmp_path / "root"
    calls = []
    for i in range(24):
        child = root / "modules" / f"m{i:02}"
        child.mkdir(parents=True)
        value = f"var.missing_{i}" if i % 3 == 0 else f'"v{i}"'
        call = "" if i % 5 else f"\nlocals {{\n  l = lenght({value})\n}}\n"
        (child / "main.tf").write_text(
            f'resource "terraform_data" "r" {{\n  input = {value}\n}}\noutput "o" {{\n  value = 1\n}}\n{call}'
        )
        calls.append(f'module "m{i:02}" {{\n  source = "./modules/m{i:02}"\n}}\n')
        calls.append(f'output "o{i:02}" {{\n  value = module.m{i:02}.{"o" if i % 4 else "nope"}\n}}\n')
    root.mkdir(exist_ok=True)
    (root / "main.tf").write_text("".join(calls))
    want = _diags(root, NO_MEMO)
    assert len(want) > 10
    # Recorded in a file: the graph checks run in a helper of their own, beside the layout
    # (``forks.later``), which forks the parts' helpers in turn.
    log = tmp_path / "shared.log"
    real, real_later = forks.shared, forks.later
    later: list[bool] = []

    def recording(tasks):  # type: ignore[no-untyped-def]
        found = real(tasks)
        with log.open("a") as f:
            f.write(f"{found is not None}\n")
        return found

    def recording_later(compute, **kwargs):  # type: ignore[no-untyped-def]
        later.append(True)
        return real_later(compute, **kwargs)

    monkeypatch.setattr(forks, "shared", recording)
    monkeypatch.setattr(forks, "later", recording_later)
    build_cache.finish()  # no writer thread running: helpers may be forked
    _forget(monkeypatch)
    # The modules from the cache (no writer started while loading), the parts computed.
    from flatten.stages.load import load_module

    for directory in [root, *sorted((root / "modules").iterdir())]:
        load_module(directory, root=root, options=Options(terraform_version=(1, 15)), memo=DiskMemo())
    _forget(monkeypatch)
    assert _diags(root, DiskMemo()) == want
    if len(os.sched_getaffinity(0)) > 1:
        assert later == [True], "the graph checks ran beside the layout"
        assert log.read_text().split() == ["True"], "the parts were computed in a forked helper too"
        # ... and written by a forked writer, which that helper waits for before it ends, and
        # the build's end waits for that helper (``forks.reap`` in ``build_cache.finish``).
        assert forks._WAITING, "the helper is waited for at the build's end"
    computed = _counting(monkeypatch)
    _forget(monkeypatch)
    assert _diags(root, DiskMemo()) == want  # and read back from the cache
    assert computed == [], "every part the writer wrote is read back"


def test_parts_are_written_in_place_when_no_writer_can_be_forked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another thread running (a fork would copy a lock it may hold): no helper, no forked
    # writer; every part is in the cache when ``checked`` returns.
    import threading

    from flatten.stages.memo import CheckKey, ModuleChecks

    monkeypatch.setenv("FLATTEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(build_cache, "_STATE", {})
    if not build_cache.enabled():
        pytest.skip("no cache key on this machine")
    requests = []
    for i in range(build_cache._SHARED_PARTS + 4):
        key = CheckKey(f"m{i}", f"module.m{i}", "", "", False, (), "terraform", (1, 11), True)
        requests.append((key, lambda: ModuleChecks((), None)))
    forks.reap()  # the helpers earlier builds in this process left
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert build_cache.checked(requests) == [ModuleChecks((), None)] * len(requests)
        assert not forks._WAITING
    finally:
        stop.set()
        other.join()
    for key, _ in requests:
        digest = build_cache.check_digest(key)
        assert build_cache._read_checks(build_cache._checks_path(digest), digest) == ModuleChecks((), None)


def _leaves_tree(root: Path) -> Path:
    """A root calling twelve modules that call none (some with errors a part finds), one of them
    twice, and one middle module calling two of them again under other names."""
    for i in range(12):
        child = root / "modules" / f"m{i:02}"
        child.mkdir(parents=True)
        value = f"var.missing_{i}" if i % 4 == 0 else "var.x"
        typo = f"\nlocals {{\n  l = lenght({value})\n}}\n" if i % 5 == 0 else ""
        cycle = "\nlocals {\n  a = local.b\n  b = local.a\n}\n" if i == 7 else ""
        (child / "main.tf").write_text(
            f'variable "x" {{\n  default = "{i}"\n}}\n'
            f'resource "terraform_data" "r" {{\n  input = "${{{value}}}-{i}"\n}}\n'
            f'output "o" {{\n  value = terraform_data.r.output\n}}\n{typo}{cycle}'
        )
    (root / "mid").mkdir()
    (root / "mid" / "main.tf").write_text(
        'module "p" {\n  source = "../modules/m01"\n  x = "p"\n}\n'
        'module "q" {\n  source = "../modules/m02"\n}\n'
        'output "o" {\n  value = module.p.o\n}\n'
    )
    calls = [f'module "m{i:02}" {{\n  source = "./modules/m{i:02}"\n  x = "c{i}"\n}}\n' for i in range(12)]
    calls.append('module "again" {\n  source = "./modules/m03"\n}\n')
    calls.append('module "mid" {\n  source = "./mid"\n}\n')
    (root / "main.tf").write_text("".join(calls))
    return root


@pytest.mark.skipif(not hasattr(os, "fork"), reason="prefetch computes in forked helpers")
@pytest.mark.parametrize("case", ["errors", "clean", "cycle"])
def test_parts_computed_ahead_where_modules_load_give_the_same_diagnostics(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prefetch's workers compute the part of each module that calls none as they load it
    # (flatten/shell/checks_ahead.py), keyed as the build's graph keys it: the build takes those
    # parts instead of computing them, and the diagnostics are exactly those of the checks
    # computed in place, in the same order (issue 41, ninth round).
    root = _leaves_tree(tmp_path / "root")
    for tf in (root / "modules").glob("*/main.tf"):
        text = tf.read_text()
        if case != "cycle":  # a cycle hides the walk's errors
            text = text.replace("a = local.b", "a = 1")
        if case != "errors":  # no typo and no missing variable
            text = re.sub(r"var\.missing_\d+", "var.x", text.replace("lenght(", "length("))
        tf.write_text(text)
    options = Options(terraform_version=(1, 15))
    want = _diags(root, NO_MEMO, options)
    summaries = {s for _, s, *_ in want}
    if case == "errors":
        assert summaries >= {"Reference to undeclared input variable", "Call to unknown function"}
    elif case == "cycle":
        assert any(str(s).startswith("Cycle:") for _, s, *_ in want), want
    else:
        assert want == []
    monkeypatch.setattr(prefetching, "MIN_PARALLEL_FILES", 1)
    monkeypatch.setattr(prefetching, "MIN_PARALLEL_BYTES", 1)
    _forget(monkeypatch)
    prefetching.prefetch(root, options=options, workers=2)
    ahead = len(build_cache.CHECKED)
    # The twelve modules that call none, the one called twice at both of its paths. The two the
    # middle module calls were loaded a level before it, under the root: their paths below it
    # are not known where they load, and the build computes those parts, as the root's and the
    # middle module's (which call others).
    assert ahead == 13, ahead
    computed = _counting(monkeypatch)
    # The graph checks in this process, where the parts computed are counted (the command line
    # runs them in a helper beside the layout: test_parts_computed_in_forked_helpers_...).
    monkeypatch.setattr(
        DiskMemo, "later", lambda self, compute, modules: NO_MEMO.later(compute, modules=modules)
    )
    assert _diags(root, DiskMemo(), options) == want
    assert sorted(computed) == ["", "module.mid", "module.mid.module.p", "module.mid.module.q"], computed
    # ... and every part computed ahead is taken
    assert not build_cache.CHECKED
    computed.clear()
    _forget(monkeypatch)
    assert _diags(root, DiskMemo(), options) == want  # and written to the cache
    assert computed == []


def test_no_part_is_computed_ahead_for_init_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # --checks init asks for no part: prefetch's workers compute none.
    from flatten.lang.options import Checks

    root = _leaves_tree(tmp_path / "root")
    monkeypatch.setattr(prefetching, "MIN_PARALLEL_FILES", 1)
    monkeypatch.setattr(prefetching, "MIN_PARALLEL_BYTES", 1)
    _forget(monkeypatch)
    prefetching.prefetch(root, options=Options(checks=Checks.INIT), workers=2)
    assert build_cache.MEMO, "the modules were computed ahead"
    assert not build_cache.CHECKED
