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
from support.cases import case_dirs
from support.oracle import Terraform, terraform, validate_json
from support.paths import DATA, SAMPLES

from flatten.build import build
from flatten.lang.options import Options
from flatten.stages.emit import write_tree

CASES = case_dirs(DATA / "oracle")


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

    verdict = validate_json(tf, out, init_must_pass=True)
    assert verdict["valid"], verdict["diagnostics"]

    assert _plan(tf, out) == _plan(tf, original)


REBUILD = case_dirs(SAMPLES) + CASES


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


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


# Every module stores the path values Terraform gives it and reads a template through path.module.
_PATHS = """
resource "terraform_data" "paths" {
  input = {
    module = path.module
    root   = path.root
    text   = templatefile("${path.module}/x.tpl", { who = "%s" })
  }
}
output "paths" {
  value = terraform_data.paths.output
}
"""


@pytest.mark.oracle
def test_modules_outside_the_root_keep_path_module(tmp_path: Path) -> None:
    """Issue 14 (3b): with the root in live/ and modules in ../shared (one nested, one reached
    through a symlink), path.module and path.root keep their values and every template read
    through path.module is found: the output plans exactly like the original."""
    tf = terraform()
    repo = tmp_path / "repo"
    _write(
        repo,
        {
            "live/main.tf": (
                _PATHS % "root"
                + 'module "shared" {\n  source = "../shared"\n}\n'
                + 'module "linked" {\n  source = "./linked"\n}\n'
                + 'module "inner" {\n  source = "./modules/inner"\n}\n'
            ),
            "live/x.tpl": "root ${who}\n",
            "live/modules/inner/main.tf": _PATHS % "inner",
            "live/modules/inner/x.tpl": "inner ${who}\n",
            "shared/main.tf": _PATHS % "shared" + 'module "nested" {\n  source = "./nested"\n}\n',
            "shared/x.tpl": "shared ${who}\n",
            "shared/nested/main.tf": _PATHS % "nested",
            "shared/nested/x.tpl": "nested ${who}\n",
            "real/main.tf": _PATHS % "real",
            "real/x.tpl": "real ${who}\n",
        },
    )
    (repo / "live" / "linked").symlink_to("../real", target_is_directory=True)
    result, diags = build(repo / "live", options=Options())
    assert not diags.has_errors, diags
    assert result.tree.root == "live"
    out = tmp_path / "flat"
    write_tree(out, result.tree.files, result.tree.copies)

    # Building the output's root again gives the same layout and files (the manifest differs: it
    # records the sources as written, and the symlink is gone from the output).
    again, diags = build(out / result.tree.root, options=Options())
    assert not diags.has_errors, diags
    assert again.tree.root == "live"
    assert {k: v for k, v in again.files.items() if k != "flatten.manifest.json"} == {
        k: v for k, v in result.files.items() if k != "flatten.manifest.json"
    }

    want = _plan(tf, repo / "live")
    inputs = {
        r["address"]: r["change"]["after"]["input"]
        for r in want["resource_changes"]
        if r["type"] == "terraform_data"
    }
    # The values the fix is about, as Terraform gives them to the original.
    assert inputs["module.shared.module.nested.terraform_data.paths"]["module"] == "../shared/nested"
    assert inputs["module.linked.terraform_data.paths"]["module"] == "../real"
    assert _plan(tf, out / result.tree.root) == want
