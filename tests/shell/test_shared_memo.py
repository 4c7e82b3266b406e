"""The many-root memo layer (flatten/shell/shared_memo.py) and fork fan-out (flatten/shell/fanout.py)."""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from support.files import write_tree

from flatten.build import build
from flatten.lang.diagnostics import Diagnostics
from flatten.lang.model import Body, Module
from flatten.lang.options import Dialect, Options
from flatten.shell.fanout import run_all
from flatten.shell.prefetch import finish
from flatten.shell.shared_memo import SharedMemo, preload
from flatten.stages.files import DirectoryListing
from flatten.stages.graph import ModuleGraph
from flatten.stages.layout import OutputTree
from flatten.stages.memo import NO_MEMO, LoadedModule, MemoKey, ModuleSource, ParseSource

NET = 'variable "name" {}\n\nresource "terraform_data" "net" {\n  input = var.name\n}\n'


class Counting:
    """A memo that computes everything and counts each compute: parses by file, loads by directory."""

    def __init__(self) -> None:
        self.parses: Counter[str] = Counter()
        self.loads: Counter[str] = Counter()

    def parsed(
        self, source: ParseSource, compute: Callable[[], tuple[Body, Diagnostics]]
    ) -> tuple[Body, Diagnostics]:
        self.parses[source.name] += 1
        return compute()

    def listing(
        self, directory: Path, dialect: Dialect, compute: Callable[[], DirectoryListing]
    ) -> DirectoryListing:
        return compute()

    def module(
        self, source: ModuleSource, compute: Callable[[tuple[bytes, ...] | None], LoadedModule]
    ) -> tuple[LoadedModule, MemoKey | None]:
        self.loads[source.display] += 1
        return compute(None), None

    def emitted(
        self,
        key: MemoKey | None,
        original: Module,
        output: Module,
        provenance: bool,
        compute: Callable[[], bytes],
    ) -> bytes:
        return compute()

    def later(self, compute: Callable[[], Diagnostics], *, modules: int) -> Callable[[], Diagnostics]:
        value = compute()
        return lambda: value

    def laid_out(self, graph: ModuleGraph, tree: OutputTree) -> None:
        return None


def monorepo(base: Path) -> list[Path]:
    files: dict[str, str | bytes] = {"modules/net/main.tf": NET, "modules/net/override.tf": "locals {}\n"}
    for name in ("prod", "staging", "dev"):
        files[f"live/{name}/main.tf"] = (
            f'module "net" {{\n  source = "../../modules/net"\n  name = "{name}"\n}}\n'
        )
    write_tree(base, files)
    return [base / "live" / name for name in ("prod", "staging", "dev")]


def test_a_shared_module_is_parsed_and_merged_once_for_three_roots(tmp_path: Path) -> None:
    roots = monorepo(tmp_path)
    counting = Counting()
    memo = SharedMemo(counting)
    options = Options()
    results = [build(root, options=options, memo=memo) for root in roots]
    assert all(not diags.has_errors for _, diags in results)
    assert counting.loads["../../modules/net"] == 1
    assert counting.parses["../../modules/net/main.tf"] == 1
    assert counting.parses["../../modules/net/override.tf"] == 1
    assert sum(counting.loads.values()) == 4  # the three roots and the module
    # The same output as each root built alone, without the layer.
    for root, (result, _) in zip(roots, results, strict=True):
        alone, _ = build(root, options=options, memo=NO_MEMO)
        assert result.files == alone.files


def test_preload_loads_everything_the_builds_then_ask_for(tmp_path: Path) -> None:
    roots = monorepo(tmp_path)
    counting = Counting()
    memo = SharedMemo(counting)
    found = preload(roots, options=Options(), memo=memo)
    assert found == {r.resolve() for r in roots} | {(tmp_path / "modules/net").resolve()}
    assert sum(counting.loads.values()) == 4
    for root in roots:
        build(root, options=Options(), memo=memo)
    assert sum(counting.loads.values()) == 4  # the builds loaded nothing again


def test_a_root_at_another_depth_loads_the_module_under_its_own_name(tmp_path: Path) -> None:
    """Ranges name files relative to the root, so the module's load is its own (docs/monorepo.md)."""
    roots = monorepo(tmp_path)
    deep = write_tree(
        tmp_path / "live/eu/prod",
        {"main.tf": 'module "net" {\n  source = "../../../modules/net"\n  name = "eu"\n}\n'},
    )
    counting = Counting()
    memo = SharedMemo(counting)
    for root in [*roots, deep]:
        build(root, options=Options(), memo=memo)
    assert counting.loads["../../modules/net"] == 1
    assert counting.loads["../../../modules/net"] == 1


def test_fan_out_returns_results_in_item_order(tmp_path: Path) -> None:
    seen: list[int] = []

    def job(i: int) -> tuple[int, int]:
        if i == 3:
            raise ValueError("a job that raises gives None")
        return i, os.getpid()

    results = run_all(7, job, workers=3, done=seen.append, before_fork=finish)
    assert [r[0] if r is not None else None for r in results] == [0, 1, 2, None, 4, 5, 6]
    assert sorted(seen) == list(range(7))
    pids = {r[1] for r in results if r is not None}
    if threading.active_count() == 1:  # forked: the work ran in three child processes, not here
        assert os.getpid() not in pids and len(pids) == 3
    else:  # another thread runs in this test process (never fork then): the work ran here
        assert pids == {os.getpid()}
    # One worker: the same results, computed here.
    serial = run_all(7, job, workers=1)
    assert [r[0] if r is not None else None for r in serial] == [0, 1, 2, None, 4, 5, 6]
    assert {r[1] for r in serial if r is not None} == {os.getpid()}
