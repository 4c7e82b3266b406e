"""``Scans``: one module's templates scanned once for the cycle check and the validate walk."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from flatten.syntax import references
from flatten.syntax.references import ExpressionError, Scans, template_calls, template_references

TEMPLATES = [
    "${var.a}",
    "plain text, no references",
    "${[for x in local.xs : x if x != var.skip]}",
    "%{ for k in keys(module.m) }${k}%{ endfor }",
    "${lenght(var.a)} ${provider::aws::arn(data.x.y.id)}",
    "$${var.escaped} ${local.b}",
]


@pytest.mark.parametrize("text", TEMPLATES)
def test_a_scan_answers_as_a_fresh_one_does(text: str) -> None:
    scans = Scans()
    for _ in range(2):  # the first asks the scanner, the second is answered from the first
        refs, calls = scans.calls(text)
        fresh_refs, fresh_calls = template_calls(text)
        assert [(r.root, r.steps, r.start, r.end) for r in refs] == [
            (r.root, r.steps, r.start, r.end) for r in fresh_refs
        ]
        assert [(c.name, c.start) for c in calls] == [(c.name, c.start) for c in fresh_calls]
        assert [r.root for r in scans.references(text)] == [r.root for r in template_references(text)]


def test_bound_names_are_part_of_what_is_asked() -> None:
    scans = Scans()
    assert [r.root for r in scans.references("${it.value} ${var.a}")] == ["it", "var"]
    assert [r.root for r in scans.references("${it.value} ${var.a}", frozenset({"it"}))] == ["var"]


def test_each_template_is_scanned_once_and_literal_text_never(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    real = references.template_calls

    def counting(text: str, *, bound: frozenset[str] = frozenset()) -> object:
        asked.append(text)
        return real(text, bound=bound)

    monkeypatch.setattr(references, "template_calls", counting)
    scans = Scans()
    for text in [*TEMPLATES, *TEMPLATES]:
        scans.calls(text)
    assert asked == [t for t in TEMPLATES if "${" in t or "%{" in t]


def test_an_unreadable_template_is_an_error_every_time() -> None:
    scans = Scans()
    for _ in range(2):
        with pytest.raises(ExpressionError):
            scans.calls("${var.a")


def test_a_limit_keeps_the_newest_scans_only(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    real = references.template_calls

    def counting(text: str, *, bound: frozenset[str] = frozenset()) -> object:
        asked.append(text)
        return real(text, bound=bound)

    monkeypatch.setattr(references, "template_calls", counting)
    scans = Scans(limit=2)
    for text in ["${var.a}", "${var.b}", "${var.c}", "${var.c}", "${var.b}", "${var.a}"]:
        scans.calls(text)
    # var.a was dropped when var.c came (the oldest first); var.b and var.c were still kept.
    assert asked == ["${var.a}", "${var.b}", "${var.c}", "${var.a}"]


# -- the scan record: every expression scanned once, where the module is loaded ------------------

_MODULE = """
variable "n" {
  type = number
}
locals {
  m     = { a = { id = "x" } }
  names = [for k, v in local.m : "${k}-${v.id}" if(v.id != "")]
}
resource "terraform_data" "a" {
  count = var.n
  input = merge(local.m, { n = "${var.n}" })
  dynamic "x" {
    for_each = local.names
    iterator = it
    content {
      v = it.value
    }
  }
  lifecycle {
    replace_triggered_by = [terraform_data.b.id]
  }
  provisioner "local-exec" {
    command = "echo ${path.module}/run.sh ${self.id}"
  }
  depends_on = [terraform_data.b]
}
resource "terraform_data" "b" {
  input = file("${path.module}/data.txt")
}
output "o" {
  value      = [terraform_data.a[0].id, local.names, upper("x")]
  depends_on = [terraform_data.b]
}
"""
_ROOT = """
provider "terraform" {
  alias = "x"
}
module "c" {
  source     = "./child"
  for_each   = toset(["a"])
  n          = length(each.key)
  depends_on = [terraform_data.r]
  providers = {
    terraform = terraform.x
  }
}
resource "terraform_data" "r" {
  input = { for k, v in { a = local.id } : k => "${v}-${k}" }
}
import {
  to = terraform_data.r
  id = "r-${local.id}"
}
locals {
  id = "x"
}
output "o" {
  value = module.c["a"].o
}
"""


def _tree(tmp_path: object) -> object:
    from pathlib import Path

    root = Path(str(tmp_path)) / "root"
    (root / "child").mkdir(parents=True)
    (root / "main.tf").write_text(_ROOT)
    (root / "child" / "main.tf").write_text(_MODULE)
    (root / "child" / "data.txt").write_text("x")
    return root


def test_the_record_holds_the_scan_of_every_template(tmp_path: object) -> None:
    from pathlib import Path

    from flatten.lang.options import Options
    from flatten.stages.load import load_module

    root = Path(str(_tree(tmp_path)))
    loaded, _ = load_module(root / "child", root=root, options=Options())
    record = loaded.module.scans
    assert record == references.scan_module(loaded.module)
    for text, scanned in record.items():
        fresh = template_calls(text)
        assert scanned is not None
        assert [(r.root, r.steps, r.start) for r in scanned[0]] == [
            (r.root, r.steps, r.start) for r in fresh[0]
        ]
    # A bare depends_on item is kept as the template ${ITEM}.
    assert "${terraform_data.b}" in record
    assert "${terraform_data.b.id}" in record  # replace_triggered_by


def test_modules_loaded_by_one_process_share_their_scans(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A text in two modules is scanned once (scan_module's known): the second module's record
    # holds the first's scan, equal to what scanning it again gives.
    from pathlib import Path

    from flatten.lang.options import Options
    from flatten.stages.load import load_module

    root = Path(str(_tree(tmp_path)))
    (root / "twin").mkdir()
    (root / "twin" / "main.tf").write_text(_MODULE)
    asked: list[str] = []
    real = references.template_calls

    def counting(text: str, **kwargs: object) -> object:
        asked.append(text)
        return real(text, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(references, "template_calls", counting)
    known: dict[str, object] = {}
    first, _ = load_module(root / "child", root=root, options=Options(), known_scans=known)  # type: ignore[arg-type]
    once = len(asked)
    second, _ = load_module(root / "twin", root=root, options=Options(), known_scans=known)  # type: ignore[arg-type]
    assert once and len(asked) == once, "the twin's texts were all scanned for the first module"
    assert second.module.scans == first.module.scans
    alone, _ = load_module(root / "twin", root=root, options=Options())
    assert second.module.scans == alone.module.scans
    # A bound on what is kept: the oldest scans go, the record stays whole.
    monkeypatch.setattr(references, "KNOWN_KEPT", 2)
    small: dict[str, object] = {}
    bounded, _ = load_module(root / "child", root=root, options=Options(), known_scans=small)  # type: ignore[arg-type]
    assert len(small) <= 2
    assert bounded.module.scans == alone.module.scans


class _Copying:
    """A memo that gives each module as another process would: a pickled copy (a prefetch
    helper's, the module cache's), every scan of its record a copy of its own."""

    def __getattr__(self, name: str) -> object:
        from flatten.stages.memo import NO_MEMO

        return getattr(NO_MEMO, name)

    def module(self, source: object, compute: object) -> object:
        import pickle

        assert callable(compute)
        return pickle.loads(pickle.dumps(compute(None))), None


def test_modules_another_process_loaded_share_their_scans_here(tmp_path: object) -> None:
    # Each module the memo gives holds its own copy of every scan; loading shares them
    # (references.share_record): 80 modules repeating their expressions held 41 MiB of equal
    # copies all build long (scripts/memtest --only modules, docs/reliability.md "Memory").
    from pathlib import Path

    from flatten.lang.options import Options
    from flatten.stages.load import load_module

    root = Path(str(_tree(tmp_path)))
    (root / "twin").mkdir()
    (root / "twin" / "main.tf").write_text(_MODULE)
    known: dict[str, object] = {}
    memo = _Copying()
    first, _ = load_module(root / "child", root=root, options=Options(), memo=memo, known_scans=known)  # type: ignore[arg-type]
    second, _ = load_module(root / "twin", root=root, options=Options(), memo=memo, known_scans=known)  # type: ignore[arg-type]
    alone, _ = load_module(root / "twin", root=root, options=Options())
    assert second.module.scans == alone.module.scans  # the record reads the same
    shared = [text for text in second.module.scans if text in first.module.scans]
    assert shared, "the two modules have texts in common"
    for text in shared:
        assert second.module.scans[text] is first.module.scans[text], text


def test_the_checks_never_scan_text_the_loader_scanned(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The single-scan rule (issue 41): with every default check on, the references, functions,
    # cycles, dependencies and path-read checks read the module's scan record and never start
    # the scanner on text the loader read. It must still scan while loading (the record).
    import importlib
    from pathlib import Path

    from flatten.lang.options import Options

    pipeline = importlib.import_module("flatten.build")  # the module (flatten.build is the function)
    layout = importlib.import_module("flatten.stages.layout")

    root = Path(str(_tree(tmp_path)))
    checking: list[str] = []  # the check running now
    scanned: dict[str, list[str]] = {"load": [], "checks": []}
    real_init = references._Scanner.__init__

    def counting(self: references._Scanner, text: str, *args: object, **kwargs: object) -> None:
        scanned["checks" if checking else "load"].append(text)
        real_init(self, text, *args, **kwargs)  # type: ignore[arg-type]

    def during(name: str, real: object) -> object:
        def wrapped(*args: object, **kwargs: object) -> object:
            checking.append(name)
            try:
                return real(*args, **kwargs)  # type: ignore[operator]
            finally:
                checking.pop()

        return wrapped

    real_calls = references.template_calls

    def counting_calls(text: str, **kwargs: object) -> object:
        # A template read in one match (``${a.b}``) starts no scanner: counted here.
        scanned["checks" if checking else "load"].append(text)
        return real_calls(text, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(references._Scanner, "__init__", counting)
    monkeypatch.setattr(references, "template_calls", counting_calls)
    real_checks = pipeline.wiring_checks

    def checks(*args: object, **kwargs: object) -> object:
        # The graph checks run after the wiring's (``rest``, beside the layout): both marked.
        wiring, found, rest = during("wiring_checks", real_checks)(*args, **kwargs)  # type: ignore[misc]
        return wiring, found, None if rest is None else during("graph checks", rest)

    monkeypatch.setattr(pipeline, "wiring_checks", checks)
    monkeypatch.setattr(layout, "path_reads", during("path_reads", layout.path_reads))
    _, diags = pipeline.build(root, options=Options(terraform_version=(1, 15)))
    assert not diags.has_errors, [d.summary for d in diags]
    assert scanned["load"], "the loader scans each template once"
    assert scanned["checks"] == []


def test_path_reads_come_from_the_record_without_walking_the_bodies_again(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A record that is not empty holds every template (scan_module), so the layout's path reads
    # (stages/pathreads.py) read its texts and find what a walk of the bodies finds (issue 41).
    from dataclasses import replace
    from pathlib import Path

    from flatten.lang.options import Checks, Options
    from flatten.stages import pathreads
    from flatten.stages.load import load_module

    root = Path(str(_tree(tmp_path)))
    loaded, _ = load_module(root / "child", root=root, options=Options())
    walked = pathreads.path_reads(replace(loaded.module, scans={}))
    assert walked == (("module", "data.txt"), ("module", "run.sh "))  # up to the next interpolation

    def no_walk(body: object) -> object:
        raise AssertionError("a module with a record had its bodies walked again")

    monkeypatch.setattr(pathreads, "_body_strings", no_walk)
    assert loaded.module.scans
    assert pathreads.path_reads(loaded.module) == walked
    # --checks init keeps no record: the bodies are walked.
    bare, _ = load_module(root / "child", root=root, options=Options(checks=Checks.INIT))
    assert bare.module.scans == {}
    with pytest.raises(AssertionError, match="walked again"):
        pathreads.path_reads(bare.module)


def test_a_module_too_large_for_a_record_is_checked_all_the_same(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Above RECORD_BLOCKS top-level blocks a module keeps no record (memory); its checks scan
    # as they read, and find what they find with one.
    from pathlib import Path

    from flatten.build import build
    from flatten.lang.options import Options
    from flatten.stages.load import load_module

    root = Path(str(_tree(tmp_path)))
    (root / "child" / "main.tf").write_text(_MODULE + 'output "typo" {\n  value = lenght(var.nn)\n}\n')
    with_record = sorted((d.summary, str(d.range)) for d in build(root, options=Options())[1])
    monkeypatch.setattr(references, "RECORD_BLOCKS", 2)
    loaded, _ = load_module(root / "child", root=root, options=Options())
    assert loaded.module.scans == {}
    without = sorted((d.summary, str(d.range)) for d in build(root, options=Options())[1])
    assert without == with_record
    assert "Reference to undeclared input variable" in {s for s, _ in without}


def test_the_checks_never_scan_on_the_memos_path(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    # The single-scan rule on the disk memo's path (flatten/shell/memo.py): a cold build computes
    # each module's part of the checks on its own (``Memo.checked``), from the scan record; a
    # warm build takes the parts from the cache and scans nothing at all.
    import importlib
    from pathlib import Path

    from flatten.lang.options import Options
    from flatten.shell import build_cache, parse_cache
    from flatten.shell import prefetch as prefetching
    from flatten.shell.memo import DiskMemo
    from flatten.stages.memo import NO_MEMO

    pipeline = importlib.import_module("flatten.build")
    root = Path(str(_tree(tmp_path)))
    options = Options(terraform_version=(1, 15))
    checking: list[str] = []
    scanned: dict[str, list[str]] = {"load": [], "checks": []}
    real_init = references._Scanner.__init__
    real_calls = references.template_calls

    def counting(self: references._Scanner, text: str, *args: object, **kwargs: object) -> None:
        scanned["checks" if checking else "load"].append(text)
        real_init(self, text, *args, **kwargs)  # type: ignore[arg-type]

    def counting_calls(text: str, **kwargs: object) -> object:
        scanned["checks" if checking else "load"].append(text)
        return real_calls(text, **kwargs)  # type: ignore[arg-type]

    real_check = pipeline.wiring_checks

    def marked(real: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: object, **kwargs: object) -> object:
            checking.append("checks")
            try:
                return real(*args, **kwargs)
            finally:
                checking.pop()

        return wrapped

    def during(*args: object, **kwargs: object) -> object:
        # The graph checks run after the wiring's (``rest``): both marked, and in this process
        # (the command line's memo runs them in a forked helper beside the layout).
        wiring, found, rest = marked(real_check)(*args, **kwargs)
        return wiring, found, None if rest is None else marked(rest)

    monkeypatch.setattr(
        DiskMemo, "later", lambda self, compute, modules: NO_MEMO.later(compute, modules=modules)
    )

    want = [(d.summary, d.range) for d in pipeline.build(root, options=options, memo=NO_MEMO)[1]]
    monkeypatch.setattr(references._Scanner, "__init__", counting)
    monkeypatch.setattr(references, "template_calls", counting_calls)
    monkeypatch.setattr(pipeline, "wiring_checks", during)
    for run in ("cold", "warm"):
        scanned["load"].clear()
        _, diags = pipeline.build(root, options=options, memo=DiskMemo())
        assert [(d.summary, d.range) for d in diags] == want
        assert scanned["checks"] == [], run
        if run == "cold":
            assert scanned["load"], "the loader scans each template once"
        prefetching.finish()
        build_cache.finish()
        for name, value in (("_CACHE", {}), ("_MEMO", {})):
            monkeypatch.setattr(parse_cache, name, value)
        for name, empty in (("_STATE", {}), ("MEMO", {}), ("PREREAD", {}), ("EMITTED", {}), ("READ", set())):
            monkeypatch.setattr(build_cache, name, empty)
    assert scanned["load"] == [], "a warm build reads the record and the parts from the cache"
