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

__all__ = ["Outcome", "call_addresses", "check_sample", "check_tree", "mirror_config"]


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


# -- the bundled samples: planned offline, not applied ------------------------------------------
#
# The samples use hashicorp/aws, which cannot apply offline. A sample is planned from an empty
# state (dummy credentials, every AWS call skipped, the provider from a filesystem mirror) before
# and after inlining, and the two plans must hold the same resources with the same planned
# values, unknowns and sensitivity, and the same outputs. A sample that does not plan offline (a
# data source that calls AWS, a provider version the mirror lacks, a remote module) is
# ``invalid``.

_OFFLINE = """
  access_key                  = "dummy"
  secret_key                  = "dummy"
  skip_credentials_validation = true
  skip_requesting_account_id  = true
  skip_metadata_api_check     = true
  skip_region_validation      = true
"""


def _offline_overrides(src: Path) -> None:
    """Give every ``provider "aws"`` block in ``src`` dummy credentials (an override file beside it)."""
    import re

    for directory in sorted({p.parent for p in src.rglob("*.tf")}):
        aliases: list[str | None] = []
        for tf_file in sorted(directory.glob("*.tf")):
            for block in re.findall(r'(?ms)^provider "aws" \{(.*?)^\}', tf_file.read_text()):
                m = re.search(r'^\s*alias\s*=\s*"([^"]+)"', block, re.M)
                alias = m.group(1) if m else None
                if alias not in aliases:
                    aliases.append(alias)
        blocks = [
            'provider "aws" {\n' + (f'  alias = "{a}"\n' if a else "") + _OFFLINE + "}\n" for a in aliases
        ]
        if blocks:
            (directory / "zz_offline_override.tf").write_text("\n".join(blocks))


def mirror_config(work: Path, mirror: Path) -> str:
    """A Terraform CLI configuration that installs providers only from ``mirror``."""
    path = work / "mirror.tfrc"
    path.write_text(f'provider_installation {{\n  filesystem_mirror {{\n    path = "{mirror}"\n  }}\n}}\n')
    return str(path)


class _ConfiguredRunner(Protocol):
    def run(self, *args: str, cwd: Path, config: str | None = None) -> _Result: ...


def _plan_summary(tf: _ConfiguredRunner, cwd: Path, config: str) -> tuple[list[str], str]:
    """Plan ``cwd`` from an empty state: the planned resources and outputs, normalised, or an error."""
    for args in (("init", "-input=false", "-backend=false"), ("plan", "-input=false", "-out=plan.bin")):
        r = tf.run(*args, "-no-color", cwd=cwd, config=config)
        if r.returncode != 0:
            return [], _first_error(r.stderr)
    plan = json.loads(tf.run("show", "-json", "plan.bin", cwd=cwd, config=config).stdout)
    items = []
    for rc in plan.get("resource_changes", []):
        c = rc["change"]
        # Addresses differ after inlining; the resources and their planned values must not.
        facts = [rc["mode"], rc["type"], c["actions"], c["after"], c["after_unknown"], c["after_sensitive"]]
        items.append(json.dumps(facts, sort_keys=True))
    for name, oc in sorted(plan.get("output_changes", {}).items()):
        facts = [name, oc["actions"], oc["after"], oc["after_unknown"], oc["after_sensitive"]]
        items.append(json.dumps(facts, sort_keys=True))
    return sorted(items), ""


def check_sample(sample: Path, work: Path, tf: _ConfiguredRunner, mirror: Path) -> list[Outcome]:
    """Plan ``sample`` offline, then its ``--inline`` output (whole and each call): the same plan."""
    src = work / "src"
    shutil.copytree(sample, src, ignore=shutil.ignore_patterns(".terraform*", "*.tfstate*"))
    _offline_overrides(src)
    config = mirror_config(work, mirror)
    expected, error = _plan_summary(tf, src, config)
    if error:
        return [Outcome("whole", "invalid", error)]
    outcomes = []
    for only in [None, *call_addresses(src)]:
        mode = only or "whole"
        out = work / ("out-" + mode.replace(".", "_"))
        built = _flatten(src, out, only)
        if built.returncode != 0:
            kind = "refused" if built.returncode == 1 else "crashed"
            outcomes.append(Outcome(mode, kind, _first_error(built.stderr)))
            continue
        got, error = _plan_summary(tf, out, config)
        if error:
            outcomes.append(Outcome(mode, "rejected", error))
        elif got != expected:
            diff = sorted(set(got) ^ set(expected))
            outcomes.append(Outcome(mode, "changed", "; ".join(d[:200] for d in diff[:3])))
        else:
            outcomes.append(Outcome(mode, "ok"))
    return outcomes
