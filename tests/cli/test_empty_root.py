"""A root module with no configuration file: a warning in the engine's words, and the build goes on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def _build(root: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FLATTEN_CACHE_DIR": str(tmp / "cache")}
    return subprocess.run(
        [sys.executable, "-m", "flatten", "build", str(root), "--out", str(tmp / "out"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


@pytest.mark.parametrize(("dialect", "product"), [("terraform", "Terraform"), ("opentofu", "OpenTofu")])
def test_empty_root_warns_in_the_engines_words_and_writes_an_empty_configuration(
    tmp_path: Path, dialect: str, product: str
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "README.md").write_text("not configuration\n")
    (root / "main.tf.bak").write_text('resource "terraform_data" "x" {}\n')
    proc = _build(root, tmp_path, "--dialect", dialect)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith("Warning: No configuration files\n\n")
    # terraform init's sentences (internal/command/views/init.go), unwrapped.
    assert (
        f"The directory has no {product} configuration files. You may begin working with {product} "
        f"immediately by creating {product} configuration files." in " ".join(proc.stderr.split())
    )
    assert json.loads((tmp_path / "out" / "main.tf.json").read_text()) == {}
    # A machine format is `terraform validate -json`'s, which says nothing of an empty directory
    # (OpenTofu's conformance case accept-module-empty): the warning is init's, on the terminal.
    proc = _build(root, tmp_path, "--dialect", dialect, "--format", "json")
    report = json.loads(proc.stdout)
    assert (proc.returncode, report["valid"], report["diagnostics"]) == (0, True, [])
    assert proc.stderr == ""


def test_an_override_file_alone_is_configuration(tmp_path: Path) -> None:
    # Terraform's IsEmptyDir counts primary and override files alike.
    root = tmp_path / "root"
    root.mkdir()
    (root / "x_override.tf").write_text("terraform {}\n")
    proc = _build(root, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "No configuration files" not in proc.stderr
