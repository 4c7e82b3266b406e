"""The team's loop on a real Terraform: build, init, apply, edit, rebuild, plan without another init.

OUT is Terraform's working directory too: what Terraform wrote there (flatten/lang/workdir.py)
survives every rebuild, keeps its inode, and `--check` does not count it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.files import write_tree
from support.oracle import Terraform, terraform

pytestmark = pytest.mark.slow

MODULE = 'variable "v" {\n  type = string\n}\noutput "v" {\n  value = var.v\n}\n'


def _root(value: str, *, provider: bool = False) -> str:
    required = (
        'terraform {\n  required_providers {\n    aws = { source = "hashicorp/aws" }\n  }\n}\n'
        if provider
        else ""
    )
    return (
        required + 'module "m" {\n  source = "./mod"\n  v      = "' + value + '"\n}\n'
        'resource "terraform_data" "a" {\n  input = module.m.v\n}\n'
    )


def flatten(*args: str | Path) -> subprocess.CompletedProcess[str]:
    # The flatten program (`python -m flatten`): replay, incremental rebuilds and the atomic swap.
    return subprocess.run([sys.executable, "-m", "flatten", *map(str, args)], capture_output=True, text=True)


def _ok(tf: Terraform, out: Path, *args: str) -> str:
    result = tf.run(*args, "-no-color", cwd=out)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _inodes(out: Path, names: list[str]) -> dict[str, int]:
    return {name: os.lstat(out / name).st_ino for name in names}


def _plugin_dir() -> Path:
    """A provider filesystem mirror with hashicorp/aws (Terraform writes a lock file only for a
    provider, and no test downloads one)."""
    for candidate in (os.environ.get("FLATTEN_TEST_PLUGIN_DIR"), "/opt/tf-plugins"):
        if candidate and (Path(candidate) / "registry.terraform.io" / "hashicorp" / "aws").is_dir():
            return Path(candidate)
    pytest.skip(
        "no provider mirror with hashicorp/aws (set FLATTEN_TEST_PLUGIN_DIR): Terraform writes "
        ".terraform.lock.hcl only for a provider"
    )


def _loop(tmp_path: Path, *, provider: bool) -> None:
    tf = terraform()
    src = write_tree(tmp_path / "src", {"main.tf": _root("one", provider=provider), "mod/main.tf": MODULE})
    out = tmp_path / "out"
    built = flatten("build", src, "--out", out)
    assert built.returncode == 0, built.stderr

    init = ["init", "-input=false"] + ([f"-plugin-dir={_plugin_dir()}"] if provider else [])
    _ok(tf, out, *init)
    _ok(tf, out, "apply", "-input=false", "-auto-approve")
    kept = [".terraform", "terraform.tfstate"] + ([".terraform.lock.hcl"] if provider else [])
    assert (out / ".terraform" / "modules" / "modules.json").is_file()
    before = _inodes(out, kept)
    state = (out / "terraform.tfstate").read_bytes()
    lock = (out / ".terraform.lock.hcl").read_bytes() if provider else b""

    # What Terraform wrote is not the build's: --check is clean right after init and apply.
    check = flatten("build", src, "--out", out, "--check")
    assert check.returncode == 0, check.stderr
    assert check.stderr == ""

    # A rebuild with nothing changed, then one after an edit of the module's caller (the first
    # is a full build, as Terraform wrote into OUT since; the second an incremental one).
    for value in ("one", "two"):
        (src / "main.tf").write_text(_root(value, provider=provider))
        rebuilt = flatten("build", src, "--out", out)
        assert rebuilt.returncode == 0, rebuilt.stderr
        assert _inodes(out, kept) == before
        assert (out / "terraform.tfstate").read_bytes() == state
        if provider:
            assert (out / ".terraform.lock.hcl").read_bytes() == lock

    # No second init: the installed modules and the state are where Terraform left them.
    _ok(tf, out, "validate")
    plan = _ok(tf, out, "plan", "-input=false")
    assert '~ input  = "one" -> "two"' in plan, plan
    assert "Plan: 0 to add, 1 to change, 0 to destroy." in plan
    # And the edit is the only difference --check sees now that the output is rebuilt: none.
    assert flatten("build", src, "--out", out, "--check").returncode == 0


def test_state_and_installed_modules_survive_rebuilds_and_plan_shows_the_edit(tmp_path: Path) -> None:
    _loop(tmp_path, provider=False)


def test_terraform_lock_file_survives_rebuilds_with_its_inode(tmp_path: Path) -> None:
    _loop(tmp_path, provider=True)
