"""Terraform as the oracle for whole builds: the flattened tree plans exactly like the original.

Each directory under tests/data/oracle/ is a root module built from the builtin ``terraform_data``
resource, locals, variables and outputs (nothing to download). For each: ``terraform validate``
accepts the output, and ``terraform plan`` of the output equals the plan of the original
(planned values, resource changes, outputs).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from oracle import Terraform, terraform

from flatten.build import build
from flatten.emit import write_tree
from flatten.options import Options

CASES = sorted(p for p in (Path(__file__).parent / "data" / "oracle").iterdir() if p.is_dir())


def _plan(tf: Terraform, directory: Path) -> dict[str, Any]:
    init = tf.run("init", "-backend=false", "-input=false", "-no-color", cwd=directory)
    assert init.returncode == 0, init.stderr + init.stdout
    plan = tf.run("plan", "-input=false", "-no-color", "-out=oracle.plan", cwd=directory)
    assert plan.returncode == 0, plan.stderr + plan.stdout
    show = tf.run("show", "-json", "oracle.plan", cwd=directory)
    assert show.returncode == 0, show.stderr
    doc = json.loads(show.stdout)
    return {
        "planned_values": doc.get("planned_values"),
        "resource_changes": doc.get("resource_changes"),
        "output_changes": doc.get("output_changes"),
        "variables": doc.get("variables"),
    }


@pytest.mark.oracle
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_flattened_tree_plans_like_the_original(case: Path, tmp_path: Path) -> None:
    tf = terraform()
    original = tmp_path / "original"
    shutil.copytree(case, original)
    result, diags = build(original, options=Options())
    assert not diags.has_errors, diags
    out = tmp_path / "flat"
    write_tree(out, result.tree.files, result.tree.copies)
    assert not any(p.name.endswith(("_override.tf", "override.tf")) for p in out.iterdir())

    init = tf.run("init", "-backend=false", "-input=false", "-no-color", cwd=out)
    assert init.returncode == 0, init.stderr
    validate = tf.run("validate", "-json", "-no-color", cwd=out)
    verdict = json.loads(validate.stdout)
    assert verdict["valid"], verdict["diagnostics"]

    assert _plan(tf, out) == _plan(tf, original)


REBUILD = sorted(p for p in (Path(__file__).parent.parent / "samples").iterdir() if p.is_dir()) + CASES


@pytest.mark.parametrize("case", REBUILD, ids=[f"{c.parent.name}/{c.name}" for c in REBUILD])
def test_building_the_output_again_reproduces_it(case: Path, tmp_path: Path) -> None:
    """Issue 4: building the emitted tree again gives the same tree, byte for byte, every file."""
    original = tmp_path / "original"
    shutil.copytree(case, original, symlinks=True)
    result, diags = build(original, options=Options())
    assert not diags.has_errors, diags
    first = tmp_path / "first"
    write_tree(first, result.tree.files, result.tree.copies)
    again, diags = build(first, options=Options())
    assert not diags.has_errors, diags
    second = tmp_path / "second"
    write_tree(second, again.tree.files, again.tree.copies)

    def tree(root: Path) -> dict[str, bytes]:
        return {
            p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
        }

    want, got = tree(first), tree(second)
    assert sorted(got) == sorted(want)
    configs = [name for name in want if name.endswith(".tf.json")]
    assert configs and all(got[name] == want[name] for name in configs)
    # Every other file (copies, the manifest) is identical too, except the manifest's record of
    # where remote packages came from, which now names the vendored copy.
    others = [name for name in want if not name.endswith(".tf.json")]
    differing = [name for name in others if got[name] != want[name]]
    remote = any(name.startswith("modules/_remote/") for name in want)
    assert differing == (["flatten.manifest.json"] if remote else [])
