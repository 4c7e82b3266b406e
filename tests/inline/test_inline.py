"""Inline mode (``flatten build --inline``): goldens per case, and Terraform as the oracle.

Each directory under ``tests/data/inline/`` is a case: a root module built from the builtin
``terraform_data`` resource, locals, outputs, variables and nested modules, plus ``case.json``
(``only``: the ``--module`` address, if any; ``inlined`` and ``kept``: the call addresses
expected) and ``expected/`` (the output tree, byte for byte; regenerate with
``FLATTEN_UPDATE_GOLDENS=1``). With Terraform as the oracle:

* ``terraform plan`` of the original and of the inlined output give the same resource values (the
  original addresses mapped through the ``moved`` blocks) and the same outputs;
* applying the original and then planning the inlined output against its state shows only moves:
  every action is ``no-op``, every moved resource has ``previous_address``, and no output changes.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from support.cases import case_dirs
from support.inline import inline_build
from support.oracle import terraform
from support.paths import DATA as TEST_DATA

from flatten.build import build
from flatten.lang.options import Options
from flatten.stages.emit import write_tree

DATA = TEST_DATA / "inline"
CASES = [p.name for p in case_dirs(DATA, holding="case.json")]
UPDATE = os.environ.get("FLATTEN_UPDATE_GOLDENS") == "1"


def _case(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / name / "case.json").read_text())
    return data


def _write(out: Path, files: dict[str, bytes]) -> None:
    write_tree(out, files)


@pytest.mark.parametrize("name", CASES)
def test_golden(name: str, tmp_path: Path) -> None:
    case = _case(name)
    src = DATA / name / "src"
    result, files, diags = inline_build(src, only=case.get("only"))
    assert not diags.has_errors, diags
    assert sorted(result.inlined) == sorted(case["inlined"])
    assert sorted(k.address for k in result.kept) == sorted(case.get("kept", []))
    expected = DATA / name / "expected"
    files = {rel: data for rel, data in files.items() if not rel.endswith("flatten.manifest.json")}
    if UPDATE:
        shutil.rmtree(expected, ignore_errors=True)
        for rel, data in files.items():
            (expected / rel).parent.mkdir(parents=True, exist_ok=True)
            (expected / rel).write_bytes(data)
    have = {p.relative_to(expected).as_posix(): p.read_bytes() for p in expected.rglob("*") if p.is_file()}
    assert sorted(have) == sorted(files)
    for rel, data in files.items():
        assert data.decode() == have[rel].decode(), rel
    if case.get("only"):
        return
    # Fixed point: inlining the output again changes nothing.
    _write(tmp_path / "out", files)
    again, again_files, again_diags = inline_build(tmp_path / "out")
    assert not again.inlined and not again_diags.has_errors
    for rel, data in again_files.items():
        if rel.endswith(".tf.json"):
            assert _uncommented(data) == _uncommented(files[rel]), rel


def _uncommented(data: bytes) -> Any:
    # "//" comments are dropped when flatten reads JSON, so the fixed point holds without them.
    doc = json.loads(data)
    if isinstance(doc.get("locals"), dict):
        doc["locals"].pop("//", None)
    return doc


# ---------------------------------------------------------------------------------------------
# Terraform as the oracle


def _tf(*args: str, cwd: Path) -> str:
    result = terraform().run(*args, "-no-color", cwd=cwd)
    assert result.returncode == 0, (
        f"terraform {' '.join(args)} in {cwd.name}:\n{result.stdout}\n{result.stderr}"
    )
    return result.stdout


def _plan(cwd: Path) -> dict[str, Any]:
    _tf("init", "-input=false", "-backend=false", cwd=cwd)
    _tf("plan", "-input=false", "-out=plan.bin", cwd=cwd)
    show = terraform().run("show", "-json", "plan.bin", cwd=cwd)
    assert show.returncode == 0, show.stderr
    plan: dict[str, Any] = json.loads(show.stdout)
    return plan


def _resources(module: dict[str, Any]) -> dict[str, Any]:
    out = {r["address"]: r.get("values") for r in module.get("resources", [])}
    for child in module.get("child_modules", []):
        out.update(_resources(child))
    return out


def _planned(plan: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    values = plan.get("planned_values", {})
    return _resources(values.get("root_module", {})), values.get("outputs", {})


@pytest.mark.oracle
@pytest.mark.parametrize("name", CASES)
def test_oracle_same_plan(name: str, tmp_path: Path) -> None:
    terraform()
    case = _case(name)
    orig = tmp_path / "orig"
    shutil.copytree(DATA / name / "src", orig)
    result, files, diags = inline_build(orig, only=case.get("only"))
    assert not diags.has_errors, diags
    out = tmp_path / "inlined"
    _write(out, files)
    before_res, before_out = _planned(_plan(orig))
    after_res, after_out = _planned(_plan(out))
    mapped = {result.new_address(addr): values for addr, values in before_res.items()}
    assert mapped == after_res
    assert before_out == after_out


_PATHS = """
resource "terraform_data" "paths" {
  input = {
    module = path.module
    root   = path.root
    text   = templatefile("${path.module}/x.tpl", { who = "%s" })
  }
}
"""


@pytest.mark.oracle
def test_oracle_modules_outside_the_root_keep_path_module(tmp_path: Path) -> None:
    """Issue 14 (3b), inline mode: an inlined module from ../shared gets path.module "../shared",
    Terraform's own value, and its template is found there; a kept call (count) to ../kept stays
    a call at its relative place. The output plans the same values at the moved addresses."""
    terraform()
    repo = tmp_path / "repo"
    files = {
        "live/main.tf": _PATHS % "root"
        + 'module "shared" {\n  source = "../shared"\n}\n'
        + 'module "kept" {\n  source = "../kept"\n  count  = 1\n}\n',
        "live/x.tpl": "root ${who}\n",
        "shared/main.tf": _PATHS % "shared" + 'module "nested" {\n  source = "./nested"\n}\n',
        "shared/x.tpl": "shared ${who}\n",
        "shared/nested/main.tf": _PATHS % "nested",
        "shared/nested/x.tpl": "nested ${who}\n",
        "kept/main.tf": _PATHS % "kept",
        "kept/x.tpl": "kept ${who}\n",
    }
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    result, diags = build(repo / "live", options=Options(inline=True))
    assert not diags.has_errors, diags
    assert result.inlined is not None and result.tree.root == "live"
    out = tmp_path / "inlined"
    write_tree(out, result.tree.files, result.tree.copies)
    assert (out / "shared" / "nested" / "x.tpl").is_file()
    before_res, _ = _planned(_plan(repo / "live"))
    after_res, _ = _planned(_plan(out / "live"))
    assert (
        before_res["module.shared.module.nested.terraform_data.paths"]["input"]["module"]
        == "../shared/nested"
    )
    mapped = {result.inlined.new_address(addr): values for addr, values in before_res.items()}
    assert mapped == after_res


@pytest.mark.oracle
@pytest.mark.parametrize("name", CASES)
def test_oracle_only_moves(name: str, tmp_path: Path) -> None:
    terraform()
    case = _case(name)
    orig = tmp_path / "orig"
    shutil.copytree(DATA / name / "src", orig)
    result, files, diags = inline_build(orig, only=case.get("only"))
    assert not diags.has_errors, diags
    _tf("init", "-input=false", cwd=orig)
    _tf("apply", "-auto-approve", "-input=false", cwd=orig)
    out = tmp_path / "inlined"
    _write(out, files)
    shutil.copy(orig / "terraform.tfstate", out / "terraform.tfstate")
    plan = _plan(out)
    changes = plan.get("resource_changes", [])
    assert changes
    moved = 0
    for rc in changes:
        assert rc["change"]["actions"] == ["no-op"], (rc["address"], rc["change"]["actions"])
        previous = rc.get("previous_address")
        if previous is not None:
            moved += 1
            assert result.new_address(previous) == rc["address"]
    expected_moves = sum(
        1
        for rc in changes
        if result.new_address(rc.get("previous_address") or rc["address"])
        != (rc.get("previous_address") or rc["address"])
    )
    assert moved == expected_moves and moved > 0
    for name_, oc in plan.get("output_changes", {}).items():
        assert oc["actions"] == ["no-op"], name_
