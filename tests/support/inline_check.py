"""Check one tree against the inline promise: applied, inlined, re-planned, only moves.

``check_tree(files, workdir, terraform)`` applies the tree with Terraform, then for the whole tree
and for ``--module`` on each call: builds it with ``flatten build --inline``, copies the state
beside the output, plans, and classifies the result as one ``Outcome``:

* ``ok``: only ``no-op`` actions (moved resources with ``previous_address``), outputs unchanged;
* ``refused``: flatten refused with an error (the reason is kept);
* ``changed``: Terraform planned a create, update, delete, or an output change;
* ``rejected``: Terraform rejected the output (init or plan failed);
* ``invalid``: the original itself does not apply (a generator problem, not counted).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

__all__ = ["Outcome", "call_addresses", "check_tree"]


class _Result(Protocol):
    returncode: int
    stdout: str
    stderr: str


class _Runner(Protocol):
    def run(self, *args: str, cwd: Path) -> _Result: ...


@dataclass(frozen=True)
class Outcome:
    mode: str  # "whole" or the --module address
    kind: str  # ok, refused, changed, rejected, invalid
    detail: str = ""


def call_addresses(root: Path) -> list[str]:
    """Return every module call address in the tree at ``root`` (from flatten's own graph)."""
    from flatten.lang.options import Options
    from flatten.stages.graph import build_graph

    graph, _ = build_graph(root, options=Options())
    return sorted(n.address for n in graph.nodes() if n.path)


def _tf(tf: _Runner, cwd: Path, *args: str) -> _Result:
    return tf.run(*args, "-no-color", cwd=cwd)


def _flatten(src: Path, out: Path, only: str | None) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, "-m", "flatten", "build", "--inline", "--out", str(out), str(src)]
    if only is not None:
        args[5:5] = ["--module", only]
    return subprocess.run(args, capture_output=True, text=True, env=dict(os.environ))


def _first_error(stderr: str) -> str:
    lines = stderr.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Error: "):
            return " ".join(x.strip() for x in lines[i : i + 6] if x.strip())[:300]
    return stderr.strip()[:300]


def _classify(plan: dict[str, Any]) -> str:
    bad = []
    for rc in plan.get("resource_changes", []):
        actions = rc["change"]["actions"]
        if actions != ["no-op"]:
            bad.append(f"{rc['address']} {'/'.join(actions)}")
    for name, oc in plan.get("output_changes", {}).items():
        if oc["actions"] != ["no-op"]:
            bad.append(f"output.{name} {'/'.join(oc['actions'])}")
    return "; ".join(bad)


def check_mode(src: Path, work: Path, tf: _Runner, only: str | None) -> Outcome:
    mode = only or "whole"
    out = work / ("out-" + (only or "whole").replace(".", "_"))
    built = _flatten(src, out, only)
    if built.returncode != 0:
        kind = "refused" if built.returncode == 1 else "crashed"
        return Outcome(mode, kind, _first_error(built.stderr))
    shutil.copy(src / "terraform.tfstate", out / "terraform.tfstate")
    for args in (("init", "-input=false", "-backend=false"), ("plan", "-input=false", "-out=plan.bin")):
        r = _tf(tf, out, *args)
        if r.returncode != 0:
            return Outcome(mode, "rejected", _first_error(r.stderr))
    show = tf.run("show", "-json", "plan.bin", cwd=out)
    changes = _classify(json.loads(show.stdout))
    return Outcome(mode, "changed", changes) if changes else Outcome(mode, "ok")


def check_tree(files: dict[str, str], work: Path, tf: _Runner, *, modules: bool = True) -> list[Outcome]:
    """Apply ``files`` in ``work``/src and check the whole tree and (``modules``) each call."""
    src = work / "src"
    for rel, text in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    for args in (("init", "-input=false"), ("apply", "-auto-approve", "-input=false")):
        r = _tf(tf, src, *args)
        if r.returncode != 0:
            return [Outcome("whole", "invalid", _first_error(r.stderr))]
    outcomes = [check_mode(src, work, tf, None)]
    if modules:
        outcomes += [check_mode(src, work, tf, a) for a in call_addresses(src)]
    return outcomes
