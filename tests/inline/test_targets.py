"""``-target``/``-exclude`` and inlined calls (issue 31 item 8).

An inlined call has no address in the output, so ``-target=module.a`` matches nothing there. The
build says so in its summary, and the manifest's ``inlined`` list gives, for each inlined call,
the addresses that replaced it (``to``) and the new address of each one inside it
(``addresses``), so a wrapper can translate its targets: planning the output with the
translated targets plans the same resources as the original with the call's address.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.files import write_tree
from support.oracle import terraform

FILES = {
    "main.tf": """
module "a" {
  source = "./a"
}
resource "terraform_data" "root" {}
""",
    "a/main.tf": """
resource "terraform_data" "a" {}
module "k" {
  source = "../k"
  count  = 2
}
variable "keys" {
  default = ["x"]
}
module "f" {
  source   = "../k"
  for_each = toset(var.keys) # known at plan time only: a call that stays a call
}
""",
    "k/main.tf": 'resource "terraform_data" "k" {}\n',
}


def _build(tmp_path: Path) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    src = write_tree(tmp_path / "src", FILES)
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "flatten", "build", "--inline", "--out", str(out), str(src)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return src, out, done


def test_summary_and_manifest_name_the_new_addresses(tmp_path: Path) -> None:
    _, out, done = _build(tmp_path)
    assert "2 module calls inlined: -target and -exclude addresses of them" in done.stderr
    inlined = {e["module"]: e for e in json.loads((out / "flatten.manifest.json").read_text())["inlined"]}
    assert set(inlined) == {"module.a", "module.a.module.k"}
    assert inlined["module.a"]["to"] == [
        "module.a__f",
        "terraform_data.a__a",
        "terraform_data.a__k__0__k",
        "terraform_data.a__k__1__k",
    ]
    assert inlined["module.a"]["addresses"]["module.a.module.f"] == "module.a__f"
    assert inlined["module.a.module.k"]["addresses"] == {
        "module.a.module.k[0].terraform_data.k": "terraform_data.a__k__0__k",
        "module.a.module.k[1].terraform_data.k": "terraform_data.a__k__1__k",
    }


def _planned(tf: object, where: Path, targets: list[str]) -> set[str]:
    run = tf.run  # type: ignore[attr-defined]
    assert run("init", "-input=false", "-no-color", cwd=where).returncode == 0
    args = ["plan", "-input=false", "-no-color", "-out=plan.bin", *(f"-target={t}" for t in targets)]
    result = run(*args, cwd=where)
    assert result.returncode == 0, result.stderr
    shown = json.loads(run("show", "-json", "plan.bin", cwd=where).stdout)
    return {c["address"] for c in shown.get("resource_changes", [])}


@pytest.mark.oracle
def test_translated_targets_plan_the_same_resources(tmp_path: Path) -> None:
    src, out, _ = _build(tmp_path)
    inlined = {e["module"]: e for e in json.loads((out / "flatten.manifest.json").read_text())["inlined"]}
    tf = terraform()
    for call in ("module.a", "module.a.module.k"):
        original = _planned(tf, src, [call])
        translated = _planned(tf, out, inlined[call]["to"])
        renamed = {inlined["module.a"]["addresses"].get(a, a) for a in original}
        renamed = {a.replace("module.a.module.f", "module.a__f") for a in renamed}
        assert translated == renamed, (call, original, translated)
        assert "terraform_data.root" not in translated
