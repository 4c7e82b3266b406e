"""The inputs the measuring scripts share: scripts/bench's tree generators and the corpus of
configuration files (parse-bench, treesitter-eval, importprofile import this, stdlib only)."""

from __future__ import annotations

import importlib.util
import os
import sys
from importlib.machinery import SourceFileLoader
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent
# ../shared, or $FLATTEN_SHARED where it is set (as tests/support/paths.py).
SHARED = Path(os.environ.get("FLATTEN_SHARED") or REPO.parent / "shared")
CORPUS_ROOTS = (SHARED / "conformance" / "cases", REPO / "samples", REPO / "tests" / "data")


def bench_module() -> ModuleType:
    """scripts/bench loaded as the module ``bench`` (its generators: ``generate``,
    ``generate_flat``, ``generate_small``), once per process."""
    found = sys.modules.get("bench")
    if found is not None:
        return found
    loader = SourceFileLoader("bench", str(REPO / "scripts" / "bench"))
    spec = importlib.util.spec_from_loader("bench", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench"] = module  # before running it: its dataclasses look their module up
    loader.exec_module(module)
    return module


def corpus_files() -> list[Path]:
    """Every .tf/.tofu file of the conformance cases, samples/ and tests/data/ that is UTF-8
    (load.py reports one that is not before any parser runs), sorted."""
    found = sorted(
        p
        for r in CORPUS_ROOTS
        if r.is_dir()
        for p in r.rglob("*")
        if p.suffix in (".tf", ".tofu") and p.is_file()
    )
    out = []
    for path in found:
        try:
            path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            continue
        out.append(path)
    return out
